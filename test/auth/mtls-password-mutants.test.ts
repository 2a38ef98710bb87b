// What a caller can observe of mtlsAuth(), getClientCertificate() and the scrypt helpers beyond
// mtls.test.ts, hostile-certificates.test.ts and password.test.ts: exact problems (no challenge),
// option messages, node's quoted `subjectaltname` entries, sockets that are not quite TLS, and
// hashPassword/verifyPassword/needsRehash at their parameter, salt and key-length bounds.

import { scryptSync, X509Certificate } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { Socket } from 'node:net';
import { type DetailedPeerCertificate, TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.js';
import { authenticate } from '../../src/auth/authenticate.js';
import type { Authenticator } from '../../src/auth/authenticator.js';
import { getClientCertificate } from '../../src/auth/certificate.js';
import { type MtlsOptions, mtlsAuth } from '../../src/auth/mtls.js';
import { hashPassword, needsRehash, verifyPassword } from '../../src/auth/password.js';
import type { Middleware } from '../../src/core/compose.js';
import { HttpError } from '../../src/core/errors/errors.js';
import { getPrincipal } from '../../src/core/principal.js';
import { sendJson } from '../../src/core/send.js';
import { type AuthRefusedMessage, channels, silentLogger } from '../../src/diagnostics/index.js';
import { tlsServerOptions } from '../../src/http/https.js';
import { thrownTypeError } from '../helpers/errors.js';
import { fakeRequest } from '../helpers/fake-http.js';
import { closeAll, json, type Listening, listen, request } from '../helpers/http.js';

afterEach(closeAll);

const tlsFile = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
const ca = tlsFile('ca.pem');
const alice = { cert: tlsFile('client.pem'), key: tlsFile('client.key') };
const aliceX509 = new X509Certificate(alice.cert);
const expired = { cert: tlsFile('client-expired.pem'), key: tlsFile('client-expired.key') };
const otherCa = { cert: tlsFile('client-other-ca.pem'), key: tlsFile('client-other-ca.key') };

/** An HTTPS server with the fixture CA, asking for client certificates, running `handlers`. */
function httpsServer(handlers: Middleware[]): Promise<Listening> {
  const options = tlsServerOptions({ cert: tlsFile('server.pem'), key: tlsFile('server.key'), ca });
  return listen(createHttpsServer(options, toNodeListener(handlers, { logger: silentLogger })));
}

/**
 * A request whose socket stands in for a TLSSocket that verified its peer: `getPeerCertificate`
 * answers `certificate`; `socket` overrides the other fields.
 */
function requestOver(certificate: unknown, socket: Record<string, unknown> = {}): IncomingMessage {
  const req = fakeRequest();
  req.socket = {
    encrypted: true,
    authorized: true,
    authorizationError: null,
    getPeerCertificate: () => certificate,
    ...socket,
  } as unknown as Socket;
  return req;
}

/** Alice's certificate as node reports it, with other fields (such as `subjectaltname`). */
const aliceWith = (fields: Partial<DetailedPeerCertificate> = {}) =>
  ({ subject: { O: 'portico tests', CN: 'alice' }, raw: aliceX509.raw, ...fields }) as unknown;

/** The problem `authenticate(req)` was refused with, as the fields a client would get. */
async function refusal(auth: Authenticator, req: IncomingMessage) {
  const error = await Promise.resolve()
    .then(() => auth.authenticate(req))
    .then(
      () => undefined,
      (err: unknown) => err,
    );
  expect(error).toBeInstanceOf(HttpError);
  const { status, code, type, title, detail, headers } = error as HttpError;
  return { status, code, type, title, detail, headers };
}

const invalid = (detail: string) => ({
  status: 401,
  code: 'ERR_AUTH_INVALID',
  type: 'urn:portico:problem:invalid-credentials',
  title: 'Invalid credentials',
  detail,
  headers: {},
});
const NOT_ALLOWED = 'The client certificate is not allowed here.';

describe('mtlsAuth over a real TLS connection', () => {
  it('hands `map` the detailed certificate, its issuer included', async () => {
    const auth = mtlsAuth({
      map: (certificate) => ({
        sub: String(certificate.subject.CN),
        name: String(certificate.issuerCertificate.subject.CN),
        scopes: [],
        method: 'mtls',
      }),
    });
    const server = await httpsServer([
      authenticate([auth]),
      (req, res) => {
        const presented = getClientCertificate(req)!;
        sendJson(res, 200, {
          principal: getPrincipal(req),
          authorized: presented.authorized,
          error: presented.error ?? 'none',
        });
      },
    ]);
    const reply = await request(server, '/', { tls: { ca, ...alice } });
    expect(reply.status, reply.body).toBe(200);
    expect(json(reply)).toEqual({
      principal: { sub: 'alice', name: 'portico test CA', scopes: [], method: 'mtls' },
      authorized: true,
      error: 'none',
    });
  });

  it.each<[string, { cert: Buffer; key: Buffer }, MtlsOptions, Record<string, unknown>]>([
    [
      'an expired certificate',
      expired,
      {},
      {
        type: 'urn:portico:problem:credentials-expired',
        title: 'Credentials expired',
        detail: 'The client certificate has expired.',
      },
    ],
    [
      'a certificate of another CA',
      otherCa,
      {},
      {
        type: 'urn:portico:problem:invalid-credentials',
        title: 'Invalid credentials',
        detail: 'The client certificate is not trusted: it was not issued by a trusted CA.',
      },
    ],
    [
      'a certificate whose fingerprint is not listed',
      alice,
      { fingerprints: [new X509Certificate(tlsFile('server.pem')).fingerprint256] },
      {
        type: 'urn:portico:problem:invalid-credentials',
        title: 'Invalid credentials',
        detail: NOT_ALLOWED,
      },
    ],
    [
      'a certificate without a listed subject alternative name',
      alice,
      { subjectAltNames: ['DNS:svc.internal'] },
      {
        type: 'urn:portico:problem:invalid-credentials',
        title: 'Invalid credentials',
        detail: NOT_ALLOWED,
      },
    ],
    [
      'a certificate that `map` refuses',
      alice,
      { map: () => undefined },
      {
        type: 'urn:portico:problem:invalid-credentials',
        title: 'Invalid credentials',
        detail: NOT_ALLOWED,
      },
    ],
  ])(
    'answers %s with a 401 that has no WWW-Authenticate challenge',
    async (_, identity, options, problem) => {
      const server = await httpsServer([
        authenticate([mtlsAuth(options)]),
        (_req, res) => sendJson(res, 200, {}),
      ]);
      const reply = await request(server, '/', { tls: { ca, ...identity } });
      expect(reply.status).toBe(401);
      expect(reply.headers['www-authenticate']).toBeUndefined();
      expect(json(reply)).toMatchObject({ ...problem, status: 401 });
    },
  );

  it('names its scheme, mTLS, in authRefused', async () => {
    const auth = mtlsAuth();
    expect(auth.scheme).toBe('mTLS');
    const server = await httpsServer([authenticate([auth]), (_req, res) => sendJson(res, 200, {})]);
    const seen: AuthRefusedMessage[] = [];
    const onMessage = (message: unknown) => seen.push(message as AuthRefusedMessage);
    subscribe(channels.authRefused, onMessage);
    try {
      expect((await request(server, '/', { tls: { ca, ...expired } })).status).toBe(401);
    } finally {
      unsubscribe(channels.authRefused, onMessage);
    }
    expect(
      seen.map(({ status, code, mechanism, surface }) => ({ status, code, mechanism, surface })),
    ).toEqual([{ status: 401, code: 'ERR_AUTH_EXPIRED', mechanism: 'mTLS', surface: 'http' }]);
  });
});

describe('getClientCertificate and sockets that are not quite TLS', () => {
  it('leaves a socket that says it is encrypted but cannot show a certificate alone', async () => {
    const req = requestOver(undefined, { getPeerCertificate: undefined });
    expect(getClientCertificate(req)).toBeUndefined();
    expect(await mtlsAuth().authenticate(req)).toBeUndefined();
  });

  it('does not believe a certificate on a socket that is not encrypted', async () => {
    const req = requestOver(aliceWith(), { encrypted: false });
    expect(getClientCertificate(req)).toBeUndefined();
    expect(await mtlsAuth().authenticate(req)).toBeUndefined();
  });

  it('leaves a request whose TLS socket has closed unauthenticated (node answers null)', async () => {
    const socket = new TLSSocket(new Socket());
    socket.destroy();
    await new Promise((resolve) => setImmediate(resolve));
    expect(socket.getPeerCertificate(true)).toBeNull();
    const req = fakeRequest();
    req.socket = socket;
    expect(getClientCertificate(req)).toBeUndefined();
    expect(await mtlsAuth().authenticate(req)).toBeUndefined();
  });

  it('reports why a certificate did not verify, as a string code', () => {
    const req = requestOver(aliceWith(), {
      authorized: false,
      authorizationError: 'CERT_REVOKED',
    });
    expect(getClientCertificate(req)).toEqual({
      certificate: aliceWith(),
      authorized: false,
      error: 'CERT_REVOKED',
    });
  });
});

describe('mtlsAuth subject alternative names as node writes them', () => {
  // node writes a value holding special characters as a JSON string, a comma as \u002c
  // (checked against X509Certificate#subjectAltName of a certificate made with openssl)
  const QUOTED_LAST = 'DNS:svc.internal, URI:"spiffe://example.org/a\\u002c b"';
  const QUOTED_FIRST = 'URI:"spiffe://example.org/a\\u002c b", email:ops@example.com';
  it.each<[string, string, string[], boolean]>([
    ['an entry before a quoted one', QUOTED_LAST, ['DNS:svc.internal'], true],
    ['a quoted entry, last', QUOTED_LAST, ['URI:spiffe://example.org/a, b'], true],
    ['a quoted entry, first', QUOTED_FIRST, ['URI:spiffe://example.org/a, b'], true],
    ['the entry after a quoted one', QUOTED_FIRST, ['email:ops@example.com'], true],
    [
      'a quoted entry with escapes',
      'URI:"spiffe://example.org/\\"x\\"\\\\y"',
      ['URI:spiffe://example.org/"x"\\y'],
      true,
    ],
    [
      'not a quoted entry by its quoted text',
      QUOTED_LAST,
      ['URI:"spiffe://example.org/a\\u002c b"'],
      false,
    ],
    ['no part of a quoted entry', QUOTED_LAST, ['URI:spiffe://example.org/a'], false],
    [
      'nothing of a list with a broken quote',
      'DNS:svc.internal, URI:"spiffe://a',
      ['DNS:svc.internal'],
      false,
    ],
    [
      'nothing of a list with a bad escape',
      'DNS:"svc\\x.internal", DNS:svc.internal',
      ['DNS:svc.internal'],
      false,
    ],
    ['a DNS name whatever its case', 'DNS:Svc.Internal', ['dns:SVC.internal'], true],
    [
      'a URI only in its own case',
      'URI:spiffe://example.org/billing',
      ['URI:spiffe://example.org/Billing'],
      false,
    ],
    [
      'an e-mail address only in its own case',
      'email:Ops@example.com',
      ['email:ops@example.com'],
      false,
    ],
    [
      'no non-ASCII DNS name as an ASCII one (ß is not ss)',
      'DNS:"stra\\u00dfe.internal"',
      ['DNS:strasse.internal'],
      false,
    ],
    ['an IP address listed as IP:', 'DNS:svc.internal, IP Address:10.0.0.7', ['IP:10.0.0.7'], true],
    [
      'an IP address listed with spaces and another case',
      'IP Address:10.0.0.7',
      [' ip address :10.0.0.7'],
      true,
    ],
    [
      'a URI listed with a lower-case type',
      'URI:spiffe://example.org/billing',
      ['uri:spiffe://example.org/billing'],
      true,
    ],
    ['no IP address written in another way', 'IP Address:10.0.0.7', ['IP:10.0.0.07'], false],
  ])('matches %s', async (_, subjectaltname, subjectAltNames, accepted) => {
    const auth = mtlsAuth({ subjectAltNames });
    const req = requestOver(aliceWith({ subjectaltname }));
    if (accepted) {
      expect(await auth.authenticate(req)).toMatchObject({ sub: 'alice', method: 'mtls' });
    } else {
      expect(await refusal(auth, req)).toEqual(invalid(NOT_ALLOWED));
    }
  });
});

describe('mtlsAuth refusals', () => {
  it.each<[string, Record<string, unknown>]>([
    ['without a subject', { subject: undefined }],
    ['with an empty CN', { subject: { O: 'portico tests', CN: '' } }],
    ['with two CNs', { subject: { CN: ['alice', 'bob'] } }],
  ])('refuses a certificate %s under the default mapping', async (_, fields) => {
    const req = requestOver(aliceWith(fields as Partial<DetailedPeerCertificate>));
    expect(await refusal(mtlsAuth(), req)).toEqual(
      invalid('The client certificate names no subject (CN).'),
    );
  });

  it('says a certificate `map` refuses is not allowed, not that it has no CN', async () => {
    const req = requestOver(
      aliceWith({ subject: { CN: '' } as DetailedPeerCertificate['subject'] }),
    );
    expect(await refusal(mtlsAuth({ map: () => undefined }), req)).toEqual(invalid(NOT_ALLOWED));
  });

  it('answers a certificate that did not verify for another reason in general terms', async () => {
    const req = requestOver(aliceWith(), {
      authorized: false,
      authorizationError: 'CERT_REJECTED',
    });
    expect(await refusal(mtlsAuth(), req)).toEqual(
      invalid('The client certificate is not trusted.'),
    );
    const unexplained = requestOver(aliceWith(), { authorized: false });
    expect(await refusal(mtlsAuth(), unexplained)).toEqual(
      invalid('The client certificate is not trusted.'),
    );
  });
});

describe('mtlsAuth options', () => {
  const fingerprint = aliceX509.fingerprint256;
  const SAN_MESSAGE = (index: number) =>
    `mtlsAuth(): subjectAltNames[${index}] must look like DNS:name, URI:uri, email:address or IP:address`;
  const FINGERPRINT_MESSAGE =
    'mtlsAuth(): fingerprints[0] must be a SHA-256 fingerprint: 64 hex digits, colons allowed';
  it.each<[string, unknown, string]>([
    [
      'a typo',
      { fingerprint: [] },
      'mtlsAuth(): unknown option `fingerprint`. Did you mean `fingerprints`?',
    ],
    [
      'an empty list of names',
      { subjectAltNames: [] },
      'mtlsAuth(): `subjectAltNames` must be a non-empty array (or left out)',
    ],
    [
      'one name not in a list',
      { subjectAltNames: 'DNS:svc.internal' },
      'mtlsAuth(): `subjectAltNames` must be a non-empty array (or left out)',
    ],
    ['a name that is not a string', { subjectAltNames: [42] }, SAN_MESSAGE(0)],
    ['a name without a colon', { subjectAltNames: ['DNS:svc.internal', 'URIs'] }, SAN_MESSAGE(1)],
    ['a name with an empty value', { subjectAltNames: ['DNS:'] }, SAN_MESSAGE(0)],
    [
      'a name of a type node does not match',
      { subjectAltNames: ['DirName:/CN=svc'] },
      SAN_MESSAGE(0),
    ],
    ['a name without a type', { subjectAltNames: [':svc.internal'] }, SAN_MESSAGE(0)],
    ['a fingerprint that is not a string', { fingerprints: [42] }, FINGERPRINT_MESSAGE],
    [
      'the whole openssl fingerprint line',
      { fingerprints: [`sha256 Fingerprint=${fingerprint}`] },
      FINGERPRINT_MESSAGE,
    ],
    [
      'a 48-byte (SHA-384 long) fingerprint',
      { fingerprints: [aliceX509.fingerprint512.slice(0, 143)] },
      FINGERPRINT_MESSAGE,
    ],
  ])('refuses %s with an exact message', (_, options, message) => {
    const error = thrownTypeError(() => mtlsAuth(options as MtlsOptions));
    expect(error.message).toBe(message);
    expect(error.code).toBe('ERR_INVALID_OPTION');
  });
});

describe('scrypt helpers: messages', () => {
  const RANGE =
    'scrypt parameters out of range (cost 10–20, blockSize 1–32, parallelization 1–16, N·r·p ≤ 2^21)';
  const HASH =
    '$scrypt$ln=10,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

  it('names the function in every option and argument error', async () => {
    await expect(hashPassword(42 as never)).rejects.toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_OPTION',
      message: 'hashPassword(): the password must be a string',
    });
    await expect(verifyPassword(42 as never, HASH)).rejects.toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_OPTION',
      message: 'verifyPassword(): the password must be a string',
    });
    await expect(hashPassword('pw', { cost: 9 })).rejects.toMatchObject({
      code: 'ERR_INVALID_OPTION',
      message: `hashPassword(): ${RANGE}`,
    });
    await expect(verifyPassword('pw', undefined, { cost: 9 })).rejects.toMatchObject({
      code: 'ERR_INVALID_OPTION',
      message: `verifyPassword(): ${RANGE}`,
    });
    const error = thrownTypeError(() => needsRehash(HASH, { cost: 9 }));
    expect([error.code, error.message]).toEqual(['ERR_INVALID_OPTION', `needsRehash(): ${RANGE}`]);
  });

  it('says what is wrong with a stored hash that is not one', async () => {
    const noSaltPadding = HASH.replace('$AAAAAAAAAAAAAAAAAAAAAA$', '$AAAAAAAAAAAAAAAAAAAAAB$'); // non-canonical
    for (const stored of ['nope', noSaltPadding]) {
      await expect(verifyPassword('pw', stored), stored).rejects.toMatchObject({
        name: 'TypeError',
        code: 'ERR_INVALID_PASSWORD_HASH',
        message:
          'verifyPassword(): the stored hash is not a `$scrypt$` hash string with parameters in range',
      });
    }
  });

  it('takes a stored hash only as a string, not as the Buffer a driver may hand over', async () => {
    const encoded = await hashPassword('pw', { cost: 10 });
    expect(await verifyPassword('pw', encoded, { cost: 10 })).toBe(true);
    await expect(verifyPassword('pw', Buffer.from(encoded) as never)).rejects.toMatchObject({
      code: 'ERR_INVALID_PASSWORD_HASH',
    });
  });

  it('treats a null hash (a user without one) as an unknown user', async () => {
    expect(await verifyPassword('pw', null as never, { cost: 10 })).toBe(false);
  });

  it('keeps spaces: only non-ASCII spaces are mapped, to U+0020', async () => {
    const encoded = await hashPassword('open sesame', { cost: 10 });
    expect(await verifyPassword('open\u3000sesame', encoded)).toBe(true);
    expect(await verifyPassword('opensesame', encoded)).toBe(false);
  });
});

describe('scrypt helpers: parameter bounds', () => {
  const SALT = 'A'.repeat(22); // 16 bytes
  const KEY = 'A'.repeat(43); // 32 bytes
  const stored = (ln: number, r: number, p: number) =>
    `$scrypt$ln=${ln},r=${r},p=${p}$${SALT}$${KEY}`;

  it.each<[number, number, number]>([
    [20, 2, 1], // N·r·p = 2^21 exactly, the highest cost
    [10, 1, 1],
    [10, 32, 1],
    [10, 1, 16],
  ])('accepts cost %i, blockSize %i, parallelization %i', (ln, r, p) => {
    const options = { cost: ln, blockSize: r, parallelization: p };
    expect(needsRehash(stored(ln, r, p), options)).toBe(false);
    expect(needsRehash(stored(ln, r, p))).toBe(true);
  });

  it.each<[number, number, number]>([
    [21, 1, 1],
    [10, 33, 1],
    [15, 8, 0],
    [10, 1, 17],
  ])('refuses cost %i, blockSize %i, parallelization %i', (ln, r, p) => {
    const options = { cost: ln, blockSize: r, parallelization: p };
    expect(thrownTypeError(() => needsRehash(stored(10, 8, 1), options)).code).toBe(
      'ERR_INVALID_OPTION',
    );
  });

  it('wants a rehash for another parallelization', () => {
    expect(needsRehash(stored(10, 8, 1), { cost: 10 })).toBe(false);
    expect(needsRehash(stored(10, 8, 2), { cost: 10 })).toBe(true);
  });
});

describe('scrypt helpers: hashes with other salt and key lengths', () => {
  // PHC strings written elsewhere may use salts and keys of 16 to 64 bytes
  const b64 = (bytes: Buffer) => bytes.toString('base64').replace(/=+$/, '');
  const written = (password: string, saltBytes: number, keyBytes: number) => {
    const salt = Buffer.alloc(saltBytes, 7);
    const key = scryptSync(password, salt, keyBytes, { N: 1024, r: 8, p: 1 });
    return `$scrypt$ln=10,r=8,p=1$${b64(salt)}$${b64(key)}`;
  };

  it.each<[number, number]>([
    [16, 16],
    [64, 32],
    [16, 64],
  ])(
    'verifies a %i-byte salt and a %i-byte key, and wants a rehash',
    async (saltBytes, keyBytes) => {
      const encoded = written('pw', saltBytes, keyBytes);
      expect(await verifyPassword('pw', encoded)).toBe(true);
      expect(await verifyPassword('pW', encoded)).toBe(false);
      expect(needsRehash(encoded, { cost: 10 })).toBe(true);
    },
  );

  it('wants no rehash for its own lengths with the same parameters', () => {
    expect(needsRehash(written('pw', 16, 32), { cost: 10 })).toBe(false);
  });
});

describe('SAN types', () => {
  it('refuses a SAN type named like a member of Object.prototype', () => {
    expect(() => mtlsAuth({ subjectAltNames: ['constructor:x'] })).toThrow(
      'mtlsAuth(): subjectAltNames[0] must look like DNS:name, URI:uri, email:address or IP:address',
    );
  });
});

describe('scrypt parameters node cannot run', () => {
  // scrypt needs N < 2^(16·r) (RFC 7914 §2): cost 16–20 with blockSize 1 is refused up front
  // (node's RangeError ERR_CRYPTO_INVALID_SCRYPT_PARAMS would come from scrypt itself)
  it('refuses cost 16 with blockSize 1 as an option error', async () => {
    await expect(hashPassword('pw', { cost: 16, blockSize: 1 })).rejects.toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_OPTION',
    });
  });

  // the same rule keeps a stored `$scrypt$ln=16,r=1,p=1$…` reach scrypt, which rejects with
  // a RangeError instead of ERR_INVALID_PASSWORD_HASH "without running scrypt".
  it('refuses a stored hash with cost 16 and blockSize 1 as malformed', async () => {
    const stored = '$scrypt$ln=16,r=1,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA';
    await expect(verifyPassword('pw', stored)).rejects.toMatchObject({
      name: 'TypeError',
      code: 'ERR_INVALID_PASSWORD_HASH',
    });
  });
});
