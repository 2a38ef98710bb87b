// Client certificates at their edges (expired, another CA, self-signed, not yet valid, the
// wrong purpose, no CN and no SAN): each a 401 that names no certificate detail, and the
// server keeps serving a good one. Certificates beyond the fixtures are made with openssl.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.js';
import { authenticate } from '../../src/auth/authenticate.js';
import { mtlsAuth } from '../../src/auth/mtls.js';
import type { Middleware } from '../../src/core/compose.js';
import { getPrincipal } from '../../src/core/principal.js';
import { sendJson } from '../../src/core/send.js';
import { tlsServerOptions } from '../../src/http/https.js';
import { closeAll, json, type Listening, listen, request } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';
import { requireOpenssl } from '../helpers/tools.js';

const log = captureLogger();
const failures = log.errors;
const echo: Middleware = (req, res) => sendJson(res, 200, getPrincipal(req) ?? null);

function expectRefused(
  reply: { status: number; headers: Record<string, unknown>; body: string },
  type: string,
) {
  expect(reply.status).toBe(401);
  expect(reply.headers['content-type']).toBe('application/problem+json');
  expect(JSON.parse(reply.body).type).toBe(`urn:portico:problem:${type}`);
}

afterAll(async () => {
  await closeAll();
  expect(failures).toEqual([]);
});

describe('client certificates at their edges', () => {
  const hasOpenssl = requireOpenssl();
  const tls = new URL('../fixtures/tls/', import.meta.url).pathname;
  const fixture = (name: string) => readFileSync(join(tls, name));
  const ca = fixture('ca.pem');
  let dir = '';
  let server: Listening;
  const made: Record<string, { cert: Buffer; key: Buffer }> = {};

  function openssl(args: string[]) {
    const result = spawnSync('openssl', args, { encoding: 'utf8', cwd: dir });
    if (result.status !== 0) throw new Error(`openssl ${args[0]}: ${result.stderr}`);
  }
  /** A P-256 key and CSR for `subject`, then a certificate from `sign`. */
  function make(name: string, subject: string, sign: (csr: string, out: string) => void) {
    openssl([
      'genpkey',
      '-algorithm',
      'EC',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-out',
      `${name}.key`,
    ]);
    openssl(['req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`]);
    sign(`${name}.csr`, `${name}.pem`);
    made[name] = {
      cert: readFileSync(join(dir, `${name}.pem`)),
      key: readFileSync(join(dir, `${name}.key`)),
    };
  }
  const byCa = (ext: string) => (csr: string, out: string) => {
    writeFileSync(join(dir, `${out}.ext`), ext);
    openssl([
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      `${tls}ca.pem`,
      '-CAkey',
      `${tls}ca.key`,
      '-set_serial',
      String(Date.now()),
      '-days',
      '2',
      '-sha256',
      '-extfile',
      `${out}.ext`,
      '-out',
      out,
    ]);
  };
  /** `openssl ca` is the one that takes an explicit validity window. */
  const byCaDated = (start: string, end: string) => (csr: string, out: string) => {
    writeFileSync(join(dir, 'index.txt'), '');
    writeFileSync(join(dir, 'serial'), '1000\n');
    writeFileSync(
      join(dir, 'ca.cnf'),
      `[ca]\ndefault_ca=t\n[t]\ndatabase=index.txt\nserial=serial\nnew_certs_dir=.\ndefault_md=sha256\npolicy=p\nx509_extensions=x\nunique_subject=no\n[p]\norganizationName=optional\ncommonName=optional\n[x]\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=clientAuth\n`,
    );
    openssl([
      'ca',
      '-batch',
      '-notext',
      '-config',
      'ca.cnf',
      '-cert',
      `${tls}ca.pem`,
      '-keyfile',
      `${tls}ca.key`,
      '-startdate',
      start,
      '-enddate',
      end,
      '-in',
      csr,
      '-out',
      out,
    ]);
  };
  const CLIENT = 'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=clientAuth\n';

  beforeAll(async () => {
    if (!hasOpenssl) return;
    dir = mkdtempSync(join(tmpdir(), 'portico-hostile-mtls-'));
    make('good', '/O=portico tests/CN=carol', byCa(CLIENT));
    make('no-cn-no-san', '/O=portico tests', byCa(CLIENT));
    make('empty-subject', '/', byCa(CLIENT));
    make('not-yet-valid', '/CN=carol', byCaDated('20990101000000Z', '21000101000000Z'));
    make(
      'server-purpose',
      '/CN=carol',
      byCa('basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n'),
    );
    make('self-signed', '/CN=alice', (csr, out) =>
      openssl([
        'x509',
        '-req',
        '-in',
        csr,
        '-signkey',
        `${out.replace('.pem', '')}.key`,
        '-days',
        '2',
        '-out',
        out,
      ]),
    );
    server = await listen(
      createHttpsServer(
        tlsServerOptions({ cert: fixture('server.pem'), key: fixture('server.key'), ca }),
        toNodeListener([authenticate([mtlsAuth()]), echo], { logger: log }),
      ),
    );
  });
  afterAll(() => {
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  const fromFixtures = (name: string) => () => ({
    cert: fixture(`${name}.pem`),
    key: fixture(`${name}.key`),
  });
  const generated = (name: string) => () => made[name]!;
  it.for<[string, () => { cert: Buffer; key: Buffer }, string, RegExp]>([
    ['expired', fromFixtures('client-expired'), 'credentials-expired', /has expired/],
    ['from another CA', fromFixtures('client-other-ca'), 'invalid-credentials', /trusted CA/],
    [
      'self-signed, claiming CN=alice',
      generated('self-signed'),
      'invalid-credentials',
      /trusted CA/,
    ],
    ['not valid until 2099', generated('not-yet-valid'), 'invalid-credentials', /not valid yet/],
    [
      'for servers only (EKU serverAuth)',
      generated('server-purpose'),
      'invalid-credentials',
      /not trusted/,
    ],
    ['with neither CN nor SAN', generated('no-cn-no-san'), 'invalid-credentials', /no subject/],
    ['with an empty subject', generated('empty-subject'), 'invalid-credentials', /no subject/],
  ])(
    'answers a certificate %s with 401, and keeps serving',
    async ([, identity, type, detail], ctx) => {
      if (!hasOpenssl) ctx.skip('openssl is needed to make the certificates');
      const reply = await request(server, '/', { tls: { ca, ...identity() } });
      expectRefused(reply, type);
      expect(JSON.parse(reply.body).detail).toMatch(detail);
      expect(reply.body).not.toMatch(/BEGIN|alice|carol|CERT_|UNABLE_TO/);
      const good = await request(server, '/', { tls: { ca, ...made.good! } });
      expect(good.status).toBe(200);
      expect(json(good).sub).toBe('carol');
    },
  );
});
