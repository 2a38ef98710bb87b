// The PKCE syntax checks (RFC 7636 §4.1, §4.2) at their exact bounds, anchored at both ends,
// and the S256 check of a verifier against its challenge (the RFC's Appendix B example).
import { describe, expect, it } from 'vitest';
import {
  codeChallengeS256,
  isCodeChallenge,
  isCodeVerifier,
  verifyCodeVerifier,
} from '../../../src/oauth/protocol/pkce.js';

const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
const UNRESERVED = 'ABCXYZabcxyz0189-._~';

describe('isCodeVerifier', () => {
  it('takes 43 to 128 unreserved characters', () => {
    expect(isCodeVerifier(VERIFIER)).toBe(true);
    expect(isCodeVerifier(UNRESERVED.repeat(3).slice(0, 43))).toBe(true);
    expect(isCodeVerifier('a'.repeat(128))).toBe(true);
    expect(isCodeVerifier('~'.repeat(43))).toBe(true);
  });

  it('refuses fewer than 43 or more than 128, and any other character, at either end', () => {
    expect(isCodeVerifier('a'.repeat(42))).toBe(false);
    expect(isCodeVerifier('a'.repeat(129))).toBe(false);
    expect(isCodeVerifier('a')).toBe(false);
    expect(isCodeVerifier('')).toBe(false);
    expect(isCodeVerifier(`!${'a'.repeat(43)}`)).toBe(false);
    expect(isCodeVerifier(`${'a'.repeat(43)}!`)).toBe(false);
    expect(isCodeVerifier(`${'a'.repeat(43)}\n`)).toBe(false);
    expect(isCodeVerifier('!'.repeat(43))).toBe(false);
    expect(isCodeVerifier(`${'a'.repeat(20)} ${'a'.repeat(22)}`)).toBe(false);
  });
});

describe('isCodeChallenge', () => {
  it('takes exactly 43 base64url characters', () => {
    expect(isCodeChallenge(CHALLENGE)).toBe(true);
    expect(isCodeChallenge('_-'.repeat(21).concat('A'))).toBe(true);
  });

  it('refuses 42 or 44 characters, padding, and any other character at either end', () => {
    expect(isCodeChallenge(CHALLENGE.slice(1))).toBe(false);
    expect(isCodeChallenge(`${CHALLENGE}A`)).toBe(false);
    expect(isCodeChallenge(`A${CHALLENGE}`)).toBe(false);
    expect(isCodeChallenge(`${CHALLENGE}=`)).toBe(false);
    expect(isCodeChallenge(`.${CHALLENGE}`)).toBe(false);
    expect(isCodeChallenge(`${CHALLENGE.slice(0, 42)}~`)).toBe(false);
  });
});

describe('verifyCodeVerifier', () => {
  it('checks a verifier against its S256 challenge (RFC 7636 Appendix B)', () => {
    expect(codeChallengeS256(VERIFIER)).toBe(CHALLENGE);
    expect(verifyCodeVerifier(VERIFIER, CHALLENGE)).toBe(true);
    expect(verifyCodeVerifier(VERIFIER, CHALLENGE.replace('E9', 'E8'))).toBe(false);
    expect(verifyCodeVerifier(VERIFIER, '')).toBe(false);
    expect(verifyCodeVerifier(VERIFIER, `${CHALLENGE}${'x'.repeat(100)}`)).toBe(false);
  });

  it('refuses the challenge itself as verifier (plain), and a malformed verifier', () => {
    const longChallenge = codeChallengeS256('a'.repeat(43));
    expect(verifyCodeVerifier(longChallenge, longChallenge)).toBe(false);
    expect(verifyCodeVerifier('short', codeChallengeS256('short'))).toBe(false);
  });
});
