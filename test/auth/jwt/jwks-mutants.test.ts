// What a caller can observe of the key sources (src/auth/jwt/jwks.ts, jwks-remote.ts) beyond
// jwks.test.ts and jwt.test.ts: the exact option errors, the algorithm each kind of public key
// implies or refuses, HMAC secrets copied and imported once per algorithm, the shapes a local
// JWK Set may take, and how a remote set (a real JWKS server on 127.0.0.1) feeds the cache.
import { generateKeyPairSync, sign } from 'node:crypto';
import { exportJWK } from 'jose';
import { afterEach, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { JwtError } from '../../../src/auth/jwt/error.ts';
import { createJwtVerifier, type JwtVerifierOptions } from '../../../src/auth/jwt/jwt.ts';
import { thrownTypeError } from '../../helpers/errors.ts';
import { closeAll, listen } from '../../helpers/http.ts';
import {
  AUDIENCE,
  b64,
  ISSUER,
  makeKey,
  mint,
  now,
  startKeyServer,
  type TestKey,
} from './jwt-fixtures.ts';

const OWNER = 'createJwtVerifier():';
const SECRET = 'a-shared-secret-of-at-least-32-bytes!';
const SECRET_64 = 'a-shared-secret-long-enough-for-HS384-and-HS512-as-well-0123456789';
const REFUSED = { name: 'JwtError', kind: 'invalid', code: 'ERR_JWT_INVALID' };
const UNAVAILABLE = 'The keys to verify the token are unavailable; try again later.';

let rsa: TestKey;
let next: TestKey;
let p256: TestKey;
let p384: TestKey;
let p521: TestKey;
let ed: TestKey;
let rs384: TestKey;
let pss: TestKey;

beforeAll(async () => {
  [rsa, next, p256, p384, p521, ed, rs384, pss] = await Promise.all([
    makeKey('k1'),
    makeKey('k2'),
    makeKey('p256', 'ES256'),
    makeKey('p384', 'ES384'),
    makeKey('p521', 'ES512'),
    makeKey('ed', 'EdDSA'),
    makeKey('r384', 'RS384'),
    makeKey('pss', 'PS256'),
  ]);
});
afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  await closeAll();
});

const create = (options: Record<string, unknown>) =>
  createJwtVerifier({ issuer: ISSUER, audience: AUDIENCE, ...options } as JwtVerifierOptions);

/** Asserts that the options are refused with exactly this message (and the option code). */
function expectRefused(options: Record<string, unknown>, message: string) {
  const error = thrownTypeError(() => create(options));
  expect(error.message).toBe(`${OWNER} ${message}`);
  expect(error.code).toBe('ERR_INVALID_OPTION');
}

/** A JWKS server on 127.0.0.1 (closed when the test ends). */
async function keyServer(keys = [rsa.jwk]) {
  const server = await startKeyServer(keys);
  onTestFinished(() => server.close());
  return server;
}

describe('publicKey: the algorithm a key implies', () => {
  it.each([
    ['a P-256 key', 'ES256', () => p256],
    ['a P-384 key', 'ES384', () => p384],
    ['a P-521 key', 'ES512', () => p521],
    ['an Ed25519 key', 'EdDSA', () => ed],
  ])('verifies %s with %s without being told the algorithm', async (_, alg, key) => {
    const verified = await create({ publicKey: key().pem }).verify(await mint(key(), {}, { alg }));
    expect(verified.protectedHeader).toEqual({ alg, kid: key().kid });
    expect(verified.payload.sub).toBe('alice');
  });

  it('accepts Ed25519 as the name of the Ed25519 algorithm', async () => {
    const verifier = create({ publicKey: ed.pem, algorithms: ['Ed25519'] });
    const verified = await verifier.verify(await mint(ed, {}, { alg: 'Ed25519' }));
    expect(verified.protectedHeader.alg).toBe('Ed25519');
  });

  it('verifies PS256 with an ordinary RSA key when PS256 is allowed', async () => {
    const verifier = create({ publicKey: pss.pem, algorithms: ['PS256'] });
    const verified = await verifier.verify(await mint(pss, {}, { alg: 'PS256' }));
    expect(verified.protectedHeader.alg).toBe('PS256');
  });

  // jose 6 cannot use an `rsa-pss` KeyObject on Node 20 (it goes through a JWK, which node
  // refuses): such a key is refused when the verifier is built, never accepted to then refuse
  // every token; the same key as plain RSA verifies PS256.
  it('refuses an RSA-PSS publicKey at once, and verifies PS256 with the plain RSA key', async () => {
    const pss = generateKeyPairSync('rsa-pss', { modulusLength: 2048 }).publicKey;
    const message = 'is an RSA-PSS key, which cannot verify here';
    for (const key of [pss, pss.export({ type: 'spki', format: 'pem' })]) {
      expect(() => create({ publicKey: key })).toThrow(message);
    }
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const claims = { iss: ISSUER, aud: AUDIENCE, sub: 'alice', exp: now() + 300 };
    const input = `${b64({ alg: 'PS256' })}.${b64(claims)}`;
    const signature = sign('sha256', Buffer.from(input), {
      key: privateKey,
      padding: 6, // RSA_PKCS1_PSS_PADDING
      saltLength: 32,
    });
    const verifier = create({ publicKey, algorithms: ['PS256'] });
    const verified = await verifier.verify(`${input}.${signature.toString('base64url')}`);
    expect(verified.protectedHeader).toEqual({ alg: 'PS256' });
  });

  it("uses a JWK's own alg, and refuses any other", async () => {
    const verified = await create({ publicKey: rs384.jwk }).verify(
      await mint(rs384, {}, { alg: 'RS384' }),
    );
    expect(verified.protectedHeader.alg).toBe('RS384');
    expectRefused(
      { publicKey: rs384.jwk, algorithms: ['RS256'] },
      'the algorithm RS256 does not fit `publicKey`',
    );
  });

  it.each([
    ['a P-256 key', 'RS256', () => p256],
    ['a P-256 key', 'PS256', () => p256],
    ['a P-256 key', 'ES384', () => p256],
    ['a P-256 key', 'EdDSA', () => p256],
    ['a P-384 key', 'ES256', () => p384],
    ['an RSA key', 'ES256', () => rsa],
    ['an RSA key', 'EdDSA', () => rsa],
    ['an RSA key', 'Ed25519', () => rsa],
    ['an Ed25519 key', 'ES256', () => ed],
  ])('refuses %s for %s', (_, alg, key) => {
    expectRefused(
      { publicKey: key().pem, algorithms: [alg] },
      `the algorithm ${alg} does not fit \`publicKey\``,
    );
  });
});

describe('publicKey: what is not a usable public key', () => {
  it.each([
    ['a number', 42, '`publicKey` must be a PEM string, a KeyObject or a JWK'],
    ['null', null, '`publicKey` must be a PEM string, a KeyObject or a JWK'],
    [
      'a shared key as a JWK',
      { kty: 'oct', k: 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA' },
      'give a shared key as `secret`, not `publicKey`',
    ],
    [
      'text that only mentions a PEM header',
      'see -----BEGIN PUBLIC KEY----- below',
      '`publicKey` must be an SPKI or certificate PEM',
    ],
    [
      'a PEM whose body is no key',
      '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n',
      '`publicKey` is not a readable public key',
    ],
    [
      'a JWK whose coordinates are no point',
      { kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA' },
      '`publicKey` is not a readable public key',
    ],
  ])('refuses %s', (_, publicKey, message) => {
    expectRefused({ publicKey }, message);
  });

  it('refuses a private JWK, of the classic kinds (d) and of the AKP kind (priv)', async () => {
    const message = '`publicKey` must be a public JWK, not a private one';
    expectRefused({ publicKey: await exportJWK(rsa.privateKey) }, message);
    expectRefused(
      { publicKey: { kty: 'AKP', alg: 'ML-DSA-44', pub: 'AAAA', priv: 'AAAA' } },
      message,
    );
  });
});

describe('algorithms', () => {
  it.each([
    ['an empty list', [], '`algorithms` must be a non-empty array'],
    ['a bare string', 'RS256', '`algorithms` must be a non-empty array'],
    ['none in any case', ['RS256', 'None'], 'the algorithm `none` is never accepted'],
    ['a number', [42], 'unknown algorithm `42`'],
    ['a boxed string', [new String('RS256')], 'unknown algorithm `RS256`'],
    ['an unknown name', ['RS999'], 'unknown algorithm `RS999`'],
  ])('refuses %s', (_, algorithms, message) => {
    expectRefused({ publicKey: rsa.pem, algorithms }, message);
  });

  // the names of Object.prototype's members are not algorithms (`in` would have said they are)
  it('refuses the names of Object.prototype members as unknown algorithms', () => {
    expectRefused(
      { secret: SECRET, algorithms: ['constructor'] },
      'unknown algorithm `constructor`',
    );
    expectRefused({ publicKey: rsa.pem, algorithms: ['toString'] }, 'unknown algorithm `toString`');
  });
});

describe('secret', () => {
  it('must be a string or bytes', () => {
    expectRefused({ secret: 42 }, '`secret` must be a string or a Uint8Array');
  });

  it('keeps its own copy of the bytes: the caller may wipe its buffer', async () => {
    const bytes = new TextEncoder().encode(SECRET);
    const token = await mint(bytes);
    const verifier = create({ secret: bytes });
    bytes.fill(0);
    expect((await verifier.verify(token)).payload.sub).toBe('alice');
  });

  it('answers a token again from the cache', async () => {
    const verifier = create({ secret: SECRET });
    const token = await mint(new TextEncoder().encode(SECRET));
    const first = await verifier.verify(token);
    expect(await verifier.verify(token)).toBe(first);
  });

  it('imports the secret once per algorithm, as a verify-only key that cannot be exported', async () => {
    const bytes = new TextEncoder().encode(SECRET_64);
    const [hs256, hs384] = await Promise.all([
      mint(bytes, {}, { alg: 'HS256' }),
      mint(bytes, {}, { alg: 'HS384' }),
    ]);
    const importKey = vi.spyOn(crypto.subtle, 'importKey');
    const verifier = create({ secret: SECRET_64, algorithms: ['HS256', 'HS384'], cache: false });
    const algs = [];
    for (const token of [hs256, hs384, hs256, hs384, hs256]) {
      algs.push((await verifier.verify(token)).protectedHeader.alg);
    }
    expect(algs).toEqual(['HS256', 'HS384', 'HS256', 'HS384', 'HS256']);
    const imports = importKey.mock.calls.filter(([format]) => format === 'raw');
    expect(
      imports.map(([, , algorithm, extractable, usages]) => [algorithm, extractable, usages]),
    ).toEqual([
      [{ name: 'HMAC', hash: { name: 'SHA-256' } }, false, ['verify']],
      [{ name: 'HMAC', hash: { name: 'SHA-384' } }, false, ['verify']],
    ]);
  });
});

describe('jwks: a local key set', () => {
  it.each([
    ['null', () => null],
    ['a string', () => 'keys'],
    ['keys that are no array', () => ({ keys: {} })],
    ['a null member', () => ({ keys: [rsa.jwk, null] })],
    ['a string member', () => ({ keys: [rsa.jwk, 'RS256'] })],
    ['a function carrying keys', () => Object.assign(() => undefined, { keys: [rsa.jwk] })],
  ])('refuses %s', (_, jwks) => {
    expectRefused({ jwks: jwks() }, '`jwks` must be { keys: [...] }');
  });

  it('refuses private and shared keys', async () => {
    const privateJwk = await exportJWK(rsa.privateKey);
    const sets = [
      { keys: [rsa.jwk, privateJwk] },
      { keys: [{ kty: 'AKP', alg: 'ML-DSA-44', pub: 'AAAA', priv: 'AAAA' }] },
      { keys: [{ kty: 'oct', k: 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA' }] },
    ];
    for (const jwks of sets) expectRefused({ jwks }, '`jwks` must hold public keys only');
  });
});

describe('jwksUrl and jwksOptions', () => {
  it('takes an https: URL (fetched only on first use)', () => {
    expect(() => create({ jwksUrl: 'https://id.example.test/jwks' })).not.toThrow();
    expect(() => create({ jwksUrl: new URL('https://id.example.test/jwks') })).not.toThrow();
  });

  it('refuses other schemes, naming the option', () => {
    expectRefused({ jwksUrl: 'ftp://id.example.test/jwks' }, '`jwksUrl` must be an https: URL');
  });

  it.each([
    ['a fractional timeout', { timeoutDuration: 1.5 }, 'timeoutDuration'],
    ['a cache age given as a string', { cacheMaxAge: '600' }, 'cacheMaxAge'],
    ['a cooldown given as a string', { cooldownDuration: '0' }, 'cooldownDuration'],
  ])('refuses %s', (_, jwksOptions, name) => {
    expectRefused(
      { jwksUrl: 'https://id.example.test/jwks', jwksOptions },
      `\`jwksOptions.${name}\` must be a number ≥ 0 (jwksOptions)`,
    );
  });

  it('refuses headers that cannot be sent', () => {
    expectRefused(
      { jwksUrl: 'https://id.example.test/jwks', jwksOptions: { headers: { 'bad header': 'x' } } },
      'Headers.append: "bad header" is an invalid header name. (jwksOptions)',
    );
  });

  it('takes zero and fractional durations, and whole timeouts, and works with them', async () => {
    const server = await keyServer();
    for (const jwksOptions of [
      { cooldownDuration: 0, cacheMaxAge: 1.5, timeoutDuration: 5_000 },
      { cooldownDuration: 1.5, cacheMaxAge: 0 },
    ]) {
      const verifier = create({ jwksUrl: server.jwksUrl, jwksOptions });
      expect((await verifier.verify(await mint(rsa))).payload.sub).toBe('alice');
    }
  });
});

describe('remote JWKS: what counts as an outage', () => {
  it('takes only a 200 answer as a key set, and says why the keys are unavailable', async () => {
    const provider = await listen((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [rsa.jwk] }));
    });
    const verification = create({ jwksUrl: `${provider.url}/jwks` }).verify(await mint(rsa));
    await expect(verification).rejects.toBeInstanceOf(JwtError);
    await expect(verification).rejects.toMatchObject({
      code: 'ERR_JWT_KEYS_UNAVAILABLE',
      message: UNAVAILABLE,
    });
    await expect(verification).rejects.toHaveProperty(
      'cause',
      new Error('The JWKS endpoint gave no key set'),
    );
  });
});

describe('remote JWKS: the verified-token cache follows the key set', () => {
  it('answers a token again from the cache while the keys are fresh', async () => {
    const server = await keyServer();
    const verifier = create({ jwksUrl: server.jwksUrl });
    const token = await mint(rsa);
    const first = await verifier.verify(token);
    expect(await verifier.verify(token)).toBe(first);
    expect(server.hits).toBe(1);
  });

  it('keeps the cache when a refetch brings the same keys', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = Date.now();
    const server = await keyServer();
    const verifier = create({ jwksUrl: server.jwksUrl, jwksOptions: { cacheMaxAge: 10_000 } });
    const [token, other] = await Promise.all([mint(rsa), mint(rsa, { jti: 'other' })]);
    const first = await verifier.verify(token);
    vi.setSystemTime(start + 10_001); // the keys are stale: the next verification refetches
    await verifier.verify(other);
    expect(server.hits).toBe(2);
    expect(await verifier.verify(token)).toBe(first);
    expect(server.hits).toBe(2);
  });

  it('drops cached tokens as soon as a refetch brings other keys', async () => {
    const server = await keyServer([rsa.jwk]);
    const verifier = create({ jwksUrl: server.jwksUrl, jwksOptions: { cooldownDuration: 0 } });
    const [old, rotated] = await Promise.all([mint(rsa), mint(next)]);
    await verifier.verify(old);
    server.keys = [next.jwk];
    expect((await verifier.verify(rotated)).protectedHeader.kid).toBe('k2');
    expect(server.hits).toBe(2);
    await expect(verifier.verify(old)).rejects.toMatchObject(REFUSED);
  });

  it('notices other keys fetched while another verification completes', async () => {
    const server = await keyServer([rsa.jwk]);
    const verifier = create({ jwksUrl: server.jwksUrl, jwksOptions: { cooldownDuration: 0 } });
    const [old, during, rotated] = await Promise.all([
      mint(rsa),
      mint(rsa, { jti: 'during' }),
      mint(next),
    ]);
    await verifier.verify(old);
    server.keys = [next.jwk];
    // Hold the fetched set between portico's fetch and jose taking it in: a verification that
    // completes then sees jose's old keys, and must not count the new fetch as seen.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const toResponse = Response.json.bind(Response);
    const handOver = vi.spyOn(Response, 'json').mockImplementationOnce((data, init) => {
      const response = toResponse(data, init);
      const read = response.json.bind(response);
      Object.defineProperty(response, 'json', { value: () => gate.then(read) });
      return response;
    });
    const pending = verifier.verify(rotated);
    await vi.waitFor(() => expect(handOver).toHaveBeenCalledTimes(1), { timeout: 15_000 });
    expect((await verifier.verify(during)).payload.jti).toBe('during');
    release();
    expect((await pending).protectedHeader.kid).toBe('k2');
    await expect(verifier.verify(old)).rejects.toMatchObject(REFUSED);
  });

  it('serves cached tokens through an outage until the cooldown after the failure has passed', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = Date.now();
    const server = await keyServer();
    const verifier = create({
      jwksUrl: server.jwksUrl,
      jwksOptions: { cacheMaxAge: 10_000, cooldownDuration: 30_000 },
    });
    const [token, a, b, c] = await Promise.all([
      mint(rsa, { jti: 't' }),
      mint(rsa, { jti: 'a' }),
      mint(rsa, { jti: 'b' }),
      mint(rsa, { jti: 'c' }),
    ]);
    const first = await verifier.verify(token);
    server.down = true;
    const failedAt = start + 10_001;
    vi.setSystemTime(failedAt); // stale keys, and the refetch fails: the last good keys answer
    expect((await verifier.verify(a)).payload.jti).toBe('a');
    expect(server.hits).toBe(2);
    expect(await verifier.verify(token)).toBe(first);
    vi.setSystemTime(failedAt + 29_999);
    expect((await verifier.verify(b)).payload.jti).toBe('b');
    expect(server.hits).toBe(2);
    vi.setSystemTime(failedAt + 30_000); // the cooldown is over: the provider is asked again
    expect((await verifier.verify(c)).payload.jti).toBe('c');
    expect(server.hits).toBe(3);
  });
});
