import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.js';
import { authenticate } from '../../src/auth/authenticate.js';
import type { Authenticator } from '../../src/auth/authenticator.js';
import { type MtlsOptions, mtlsAuth } from '../../src/auth/mtls.js';
import { getPrincipal } from '../../src/core/principal.js';
import { sendJson } from '../../src/core/send.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { tlsServerOptions } from '../../src/http/https.js';
import { closeAll, json, type Listening, listen, request, serve } from '../helpers/http.js';
import { requireOpenssl } from '../helpers/tools.js';

afterEach(closeAll);

const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
const ca = fixture('ca.pem');
const client = { cert: fixture('client.pem'), key: fixture('client.key') };

/** An HTTPS server requesting client certificates from `ca.pem`, answering the principal. */
function serveTls(authenticator: Authenticator): Promise<Listening> {
  const server = createHttpsServer(
    tlsServerOptions({ cert: fixture('server.pem'), key: fixture('server.key'), ca }),
    toNodeListener(
      [
        authenticate([authenticator]),
        (req, res) => {
          const { sub, name, role, scopes, method, certificate } = getPrincipal(req)!;
          sendJson(res, 200, { sub, name, role, scopes, method, cn: certificate?.subject?.CN });
        },
      ],
      { logger: silentLogger },
    ),
  );
  return listen(server);
}

const call = (server: Listening, identity?: { cert: Buffer; key: Buffer }) =>
  request(server, '/whoami', { tls: { ca, ...identity } });

describe('mtlsAuth', () => {
  it('authenticates a certificate from the CA by its subject CN', async () => {
    const server = await serveTls(mtlsAuth());
    const reply = await call(server, client);
    expect(reply.status).toBe(200);
    expect(json(reply)).toEqual({
      sub: 'alice',
      name: 'alice',
      scopes: [],
      method: 'mtls',
      cn: 'alice',
    });
  });

  it('answers a certificate from another CA with a 401 that does not echo it', async () => {
    const server = await serveTls(mtlsAuth());
    const reply = await call(server, {
      cert: fixture('client-other-ca.pem'),
      key: fixture('client-other-ca.key'),
    });
    expect(reply.status).toBe(401);
    expect(reply.headers['content-type']).toBe('application/problem+json');
    expect(json(reply)).toMatchObject({
      type: 'urn:portico:problem:invalid-credentials',
      detail: 'The client certificate is not trusted: it was not issued by a trusted CA.',
    });
    expect(reply.body).not.toMatch(/alice|BEGIN|UNABLE_TO/);
  });

  it('answers an expired certificate with a 401 (credentials expired)', async () => {
    const server = await serveTls(mtlsAuth());
    const reply = await call(server, {
      cert: fixture('client-expired.pem'),
      key: fixture('client-expired.key'),
    });
    expect(reply.status).toBe(401);
    expect(json(reply)).toMatchObject({
      type: 'urn:portico:problem:credentials-expired',
      detail: 'The client certificate has expired.',
    });
  });

  it('leaves a request without a certificate unauthenticated', async () => {
    const server = await serveTls(mtlsAuth());
    const reply = await call(server);
    expect(reply.status).toBe(401);
    expect(json(reply)).toMatchObject({
      type: 'urn:portico:problem:authentication-required',
      title: 'Authentication required',
    });
  });

  it('answers undefined over plain HTTP', async () => {
    const auth = mtlsAuth();
    const server = await serve([
      async (req, res) => {
        const result = await auth.authenticate(req);
        sendJson(res, 200, { undefined: result === undefined });
      },
    ]);
    expect(json(await request(server, '/'))).toEqual({ undefined: true });
  });

  it('lets only listed fingerprints in, however they are written', async () => {
    const fingerprint = new X509Certificate(client.cert).fingerprint256; // AB:CD:…
    const bare = fingerprint.replace(/:/g, '').toLowerCase();
    const other = new X509Certificate(fixture('server.pem')).fingerprint256;
    for (const listed of [[fingerprint], [other, bare]]) {
      const server = await serveTls(mtlsAuth({ fingerprints: listed }));
      expect((await call(server, client)).status).toBe(200);
    }
    const server = await serveTls(mtlsAuth({ fingerprints: [other] }));
    const reply = await call(server, client);
    expect(reply.status).toBe(401);
    expect(json(reply).detail).toBe('The client certificate is not allowed here.');
  });

  it('refuses a certificate without the listed subject alternative name', async () => {
    // The fixture client certificate has no SAN at all.
    const server = await serveTls(mtlsAuth({ subjectAltNames: ['DNS:svc.internal'] }));
    const reply = await call(server, client);
    expect(reply.status).toBe(401);
    expect(json(reply).type).toBe('urn:portico:problem:invalid-credentials');
  });

  it('maps with `map`, and refuses what it maps to nothing', async () => {
    const map: MtlsOptions['map'] = (certificate) =>
      certificate.subject.CN === 'alice'
        ? { sub: 'user-1', role: 'admin', scopes: ['read:messages'], method: 'mtls' }
        : undefined;
    const server = await serveTls(mtlsAuth({ map }));
    expect(json(await call(server, client))).toMatchObject({ sub: 'user-1', role: 'admin' });
    const refusing = await serveTls(mtlsAuth({ map: () => undefined }));
    expect((await call(refusing, client)).status).toBe(401);
  });

  it.each<[string, unknown, RegExp]>([
    ['a typo', { fingerprint: [] }, /Did you mean `fingerprints`/],
    ['a short fingerprint', { fingerprints: ['ab:cd'] }, /fingerprints\[0\]/],
    ['an empty allowlist', { fingerprints: [] }, /non-empty/],
    ['a SAN without a type', { subjectAltNames: ['svc.internal'] }, /subjectAltNames\[0\]/],
    ['a map that is not a function', { map: 'cn' }, /function/],
  ])('refuses %s', (_, options, message) => {
    expect(() => mtlsAuth(options as MtlsOptions)).toThrow(message);
  });
});

describe('mtlsAuth with generated certificates', () => {
  const hasOpenssl = requireOpenssl();
  let dir: string | undefined;
  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** Issues a client certificate from the test CA (openssl required). */
  function issue(name: string, subject: string, extensions: string) {
    dir ??= mkdtempSync(join(tmpdir(), 'portico-mtls-'));
    const path = (ext: string) => join(dir!, `${name}.${ext}`);
    writeFileSync(path('ext'), extensions);
    const run = (args: string[]) => {
      const result = spawnSync('openssl', args, { encoding: 'utf8' });
      if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr}`);
    };
    const caDir = new URL('../fixtures/tls/', import.meta.url).pathname;
    run([
      'genpkey',
      '-algorithm',
      'EC',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-out',
      path('key'),
    ]);
    run(['req', '-new', '-key', path('key'), '-subj', subject, '-out', path('csr')]);
    run([
      'x509',
      '-req',
      '-in',
      path('csr'),
      '-CA',
      `${caDir}ca.pem`,
      '-CAkey',
      `${caDir}ca.key`,
      '-set_serial',
      String(Date.now()),
      '-days',
      '1',
      '-sha256',
      '-extfile',
      path('ext'),
      '-out',
      path('pem'),
    ]);
    return { cert: readFileSync(path('pem')), key: readFileSync(path('key')) };
  }

  const CLIENT_EXT = 'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=clientAuth\n';

  it('lets a listed SAN in and refuses others', async (ctx) => {
    if (!hasOpenssl) ctx.skip('openssl is not available to make a certificate with SANs');
    const identity = issue(
      'svc',
      '/O=portico tests/CN=billing',
      `${CLIENT_EXT}subjectAltName=DNS:svc.internal,URI:spiffe://example.org/billing,email:ops@example.com\n`,
    );
    for (const listed of [
      'URI:spiffe://example.org/billing',
      'DNS:SVC.internal',
      'email:ops@example.com',
    ]) {
      const server = await serveTls(mtlsAuth({ subjectAltNames: ['DNS:other.internal', listed] }));
      const reply = await call(server, identity);
      expect(reply.status).toBe(200);
      expect(json(reply).sub).toBe('billing');
    }
    const server = await serveTls(
      mtlsAuth({ subjectAltNames: ['URI:spiffe://example.org/billing/x', 'DNS:svc'] }),
    );
    expect((await call(server, identity)).status).toBe(401);
  });

  it('refuses a certificate without CN under the default mapping', async (ctx) => {
    if (!hasOpenssl) ctx.skip('openssl is not available to make a certificate without CN');
    const identity = issue(
      'nocn',
      '/O=portico tests',
      `${CLIENT_EXT}subjectAltName=DNS:svc.internal\n`,
    );
    const server = await serveTls(mtlsAuth());
    const reply = await call(server, identity);
    expect(reply.status).toBe(401);
    expect(json(reply).detail).toBe('The client certificate names no subject (CN).');
    const mapped = await serveTls(
      mtlsAuth({
        subjectAltNames: ['DNS:svc.internal'],
        map: () => ({ sub: 'svc', scopes: [], method: 'mtls' }),
      }),
    );
    expect(json(await call(mapped, identity)).sub).toBe('svc');
  });
});
