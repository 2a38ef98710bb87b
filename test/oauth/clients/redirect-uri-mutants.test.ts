// redirect-uri.ts to the letter: each refused scheme and its message, the bounds of a redirect
// URI's length and characters, and the edges of the RFC 8252 §7.3 loopback match (host case,
// port bounds, the authority as written).
import { describe, expect, it } from 'vitest';
import { redirectUriMatches, redirectUriRefusal } from '../../../src/oauth/clients/redirect-uri.js';

const ALL = ['https', 'loopback', 'private-use'] as const;

describe('redirectUriRefusal, each answer', () => {
  it.each([
    'javascript:',
    'data:',
    'vbscript:',
    'file:',
    'blob:',
    'about:',
    'filesystem:',
    'view-source:',
    'ws:',
    'wss:',
    'ftp:',
    'mailto:',
    'tel:',
  ])('never takes a %s URI', (scheme) => {
    const uri = `${scheme}//host.example/x`;
    expect(redirectUriRefusal(uri, ALL)).toBe(`a ${scheme} redirect URI is never allowed`);
    expect(redirectUriRefusal(uri.toUpperCase(), ALL)).toBe(
      `a ${scheme} redirect URI is never allowed`,
    );
  });

  it('takes 1 to 2000 characters of a string', () => {
    const message = 'each redirect URI must be a string of 1 to 2000 characters';
    const base = 'https://app.example/';
    expect(redirectUriRefusal(`${base}${'a'.repeat(2000 - base.length)}`, ALL)).toBeUndefined();
    expect(redirectUriRefusal(`${base}${'a'.repeat(2001 - base.length)}`, ALL)).toBe(message);
    for (const uri of ['', 7, null, undefined, ['https://app.example/cb']]) {
      expect(redirectUriRefusal(uri, ALL), String(uri)).toBe(message);
    }
  });

  it('refuses spaces and controls, a fragment, credentials, a relative URI', () => {
    const controls = 'a redirect URI must not hold spaces or controls';
    for (const c of [' ', '\t', '\n', '\x00', '\x1f', '\x7f']) {
      expect(redirectUriRefusal(`https://app.example/c${c}b`, ALL), JSON.stringify(c)).toBe(
        controls,
      );
    }
    expect(redirectUriRefusal('https://app.example/c~b', ALL)).toBeUndefined();
    expect(redirectUriRefusal('https://app.example/cb#', ALL)).toBe(
      'a redirect URI must not have a fragment',
    );
    expect(redirectUriRefusal('cb', ALL)).toBe('"cb" is not an absolute URI');
    expect(redirectUriRefusal('https://user@app.example/cb', ALL)).toBe(
      'a redirect URI must not carry credentials',
    );
    expect(redirectUriRefusal('https://:pass@app.example/cb', ALL)).toBe(
      'a redirect URI must not carry credentials',
    );
  });

  it('answers each shape that is not allowed with its own message', () => {
    expect(redirectUriRefusal('https://app.example/cb', ['loopback', 'private-use'])).toBe(
      'https redirect URIs are not allowed here',
    );
    expect(redirectUriRefusal('http://127.0.0.1/cb', ['https', 'private-use'])).toBe(
      'loopback redirect URIs are not allowed here',
    );
    expect(redirectUriRefusal('com.example.app:/cb', ['https', 'loopback'])).toBe(
      'private-use scheme redirect URIs are not allowed here',
    );
    expect(redirectUriRefusal('http://app.example/cb', ALL)).toBe(
      'an http redirect URI must be on 127.0.0.1, [::1] or localhost (RFC 8252 §7.3)',
    );
    expect(redirectUriRefusal('HTTP://LOCALHOST/cb', ALL)).toBeUndefined();
    expect(redirectUriRefusal('myapp:/cb', ALL)).toBe(
      'the scheme of "myapp:/cb" is neither https, loopback http, nor a private-use scheme such as com.example.app: (RFC 8252 §7.1)',
    );
    expect(redirectUriRefusal('com.example.app://cb.host/x', ALL)).toBe(
      'a private-use redirect URI has no authority: write it `com.example.app:/cb`',
    );
  });

  it('takes a private-use scheme of a reverse domain name only', () => {
    for (const uri of ['com.example.app:/cb', 'com.example-1.app+x:/cb', 'a.b:/cb']) {
      expect(redirectUriRefusal(uri, ALL), uri).toBeUndefined();
    }
    for (const uri of [
      'com.:/cb',
      'com..app:/cb',
      'comexample:/cb',
      // the part after an empty label reads as a reverse domain name on its own
      'com..example.app:/cb',
      'a+..b.c:/cb',
    ]) {
      expect(redirectUriRefusal(uri, ALL), uri).toMatch(/neither https, loopback http/);
    }
  });
});

describe('redirectUriMatches, the edges', () => {
  it.each([
    // the host's case aside, the rest as written
    ['http://LOCALHOST/cb', 'http://localhost:4000/cb', true],
    ['http://localhost/cb', 'http://LocalHost:4000/cb', true],
    ['http://localhost/cb', 'HTTP://localhost:4000/cb', true],
    ['http://localhost/CB', 'http://localhost:4000/cb', false],
    // ports: a real one, within 1–5 digits and 65535
    ['http://127.0.0.1/cb', 'http://127.0.0.1:65535/cb', true],
    ['http://127.0.0.1/cb', 'http://127.0.0.1:0/cb', true],
    ['http://127.0.0.1/cb', 'http://127.0.0.1:65536/cb', false],
    ['http://127.0.0.1/cb', 'http://127.0.0.1:123456/cb', false],
    ['http://127.0.0.1/cb', 'http://127.0.0.1:/cb', false],
    // a registered default port is a port, written
    ['http://127.0.0.1:80/cb', 'http://127.0.0.1:81/cb', false],
    // no path registered, none requested
    ['http://127.0.0.1', 'http://127.0.0.1:5000', true],
    ['http://127.0.0.1', 'http://127.0.0.1:5000/', false],
    // anything around the authority refuses the match
    ['http://127.0.0.1/cb', 'xhttp://127.0.0.1:5000/cb', false],
    ['http://127.0.0.1/cb', 'http://127.0.0.1:5000/cb#x', false],
    ['http://127.0.0.1/cb', 'http://[::1]:5000/cb', false],
    ['http://[::1]/cb', 'http://[::1]:5000/cb', true],
    ['https://localhost/cb', 'https://localhost:5000/cb', false],
    // a scheme ending in http is not http, registered or requested
    ['xhttp://127.0.0.1/cb', 'http://127.0.0.1:5000/cb', false],
    ['myhttp://localhost/cb', 'http://localhost:5000/cb', false],
    // no port requested: the exact match only, the host's case included
    ['http://LOCALHOST/cb', 'http://localhost/cb', false],
    ['http://localhost/cb', 'http://LOCALHOST/cb', false],
    ['HTTP://127.0.0.1/cb', 'http://127.0.0.1/cb', false],
    ['http://127.0.0.1/c%zz', 'http://127.0.0.1:5000/c%zz', true],
  ])('%s matches %s: %s', (registered, requested, expected) => {
    expect(redirectUriMatches(registered, requested)).toBe(expected);
  });
});
