// Client metadata documents served over https on loopback, by a real node:https server whose
// certificate (localhost, 127.0.0.1, ::1) is issued by a CA made for the tests with openssl.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A test CA and a server certificate it issued. */
export interface TestTls {
  /** The CA certificate (PEM), to trust. */
  ca: string;
  /** Where the CA certificate is (for `NODE_EXTRA_CA_CERTS`). */
  caPath: string;
  key: string;
  cert: string;
  remove(): void;
}

/** Makes a CA and a certificate for localhost, 127.0.0.1 and ::1 with openssl. */
export function makeTestTls(): TestTls {
  const dir = mkdtempSync(join(tmpdir(), 'portico-cimd-'));
  const path = (name: string) => join(dir, name);
  const run = (args: string[]) => {
    const result = spawnSync('openssl', args, { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr}`);
  };
  const ecKey = (out: string) =>
    run(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', out]);
  ecKey(path('ca.key'));
  run([
    'req',
    '-x509',
    '-new',
    '-key',
    path('ca.key'),
    '-subj',
    '/CN=portico test documents CA',
    '-days',
    '1',
    '-sha256',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-out',
    path('ca.pem'),
  ]);
  ecKey(path('server.key'));
  run([
    'req',
    '-new',
    '-key',
    path('server.key'),
    '-subj',
    '/CN=localhost',
    '-out',
    path('server.csr'),
  ]);
  writeFileSync(
    path('server.ext'),
    'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,DNS:docs.example.test,IP:127.0.0.1,IP:::1\n',
  );
  run([
    'x509',
    '-req',
    '-in',
    path('server.csr'),
    '-CA',
    path('ca.pem'),
    '-CAkey',
    path('ca.key'),
    '-set_serial',
    String(Date.now()),
    '-days',
    '1',
    '-sha256',
    '-extfile',
    path('server.ext'),
    '-out',
    path('server.pem'),
  ]);
  return {
    ca: readFileSync(path('ca.pem'), 'utf8'),
    caPath: path('ca.pem'),
    key: readFileSync(path('server.key'), 'utf8'),
    cert: readFileSync(path('server.pem'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** What the document server answers at one path. */
export type DocumentRoute = (req: IncomingMessage, res: ServerResponse) => void;

/** A running document server: its routes can change while it runs; it counts the requests. */
export interface DocumentServer {
  /** `https://localhost:<port>` */
  origin: string;
  port: number;
  routes: Map<string, DocumentRoute>;
  /** Requests received, per path. */
  hits: Map<string, number>;
  /** Serves `doc` as JSON at `path` (with `headers`), and returns its URL. */
  json(path: string, doc: (url: string) => unknown, headers?: Record<string, string>): string;
  close(): Promise<void>;
}

/** A lookup that resolves every name to loopback, where the document server listens. */
export const loopback = async (_host?: string) => [{ address: '127.0.0.1', family: 4 as const }];

/** Starts an https server on loopback (port 0) with the certificate of `tls`. */
export async function startDocumentServer(tls: TestTls): Promise<DocumentServer> {
  const routes = new Map<string, DocumentRoute>();
  const hits = new Map<string, number>();
  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const path = new URL(req.url ?? '/', 'https://localhost').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const route = routes.get(path);
    if (route === undefined) {
      res.writeHead(404).end();
      return;
    }
    route(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `https://localhost:${port}`;
  return {
    origin,
    port,
    routes,
    hits,
    json(path, doc, headers = {}) {
      const url = `${origin}${path}`;
      routes.set(path, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(doc(url)));
      });
      return url;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
