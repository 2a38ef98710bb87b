// A local identity provider for the provider recipes (docs/providers.md): it serves JSON
// documents (discovery, JWKS) on 127.0.0.1, counts the requests, and signs tokens with its
// RSA keys. test/auth/providers/stand-ins.ts gives it each provider's shapes.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

/** An RS256 signing key of a stand-in, and its public JWK (without `kid`, `alg` or `use`). */
export interface StandInKey {
  privateKey: CryptoKey;
  jwk: JWK;
}

export async function rsaKey(): Promise<StandInKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const { kty, n, e } = await exportJWK(publicKey);
  return { privateKey, jwk: { kty, n, e } };
}

/** A running stand-in: its origin, the paths it was asked for, and what it serves. */
export interface StandInServer {
  origin: string;
  /** Every path requested, in order (discovery and JWKS fetches). */
  requests: string[];
  /** Serves `body` as JSON at `path` (a function is called per request). */
  serve(path: string, body: unknown | (() => unknown)): void;
  close(): Promise<void>;
}

export async function startStandInServer(): Promise<StandInServer> {
  const documents = new Map<string, unknown>();
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://stand-in').pathname;
    requests.push(path);
    const found = documents.get(path);
    if (found === undefined) {
      res.writeHead(404).end();
      return;
    }
    const body = typeof found === 'function' ? (found as () => unknown)() : found;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    serve: (path, body) => documents.set(path, body),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Signs `claims` with `header` (its `alg`, `kid`, `typ` exactly as given: nothing added). */
export function sign(
  key: StandInKey,
  header: Record<string, string>,
  claims: Record<string, unknown>,
): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', ...header }).sign(key.privateKey);
}

/** Seconds since the epoch. */
export const now = () => Math.floor(Date.now() / 1000);

/** A random id, as providers put in `jti`, `uti` or `event_id`. */
export const id = () => randomUUID();

/** The OpenID Connect discovery document of a stand-in issuer. */
export function discoveryDocument(issuer: string, jwksUri: string, extra: object = {}) {
  return {
    issuer,
    jwks_uri: jwksUri,
    response_types_supported: ['code', 'id_token', 'token id_token'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    ...extra,
  };
}
