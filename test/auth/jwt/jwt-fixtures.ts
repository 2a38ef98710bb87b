// Keys, tokens and a JWKS / discovery server for the JWT and OIDC suites.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type CryptoKey,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  type JWK,
  type JWTHeaderParameters,
  type JWTPayload,
  SignJWT,
} from 'jose';

export const ISSUER = 'https://id.example.test';
export const AUDIENCE = 'https://api.example.test';

export interface TestKey {
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /** The public key as a JWK with `kid`, `alg` and `use`. */
  jwk: JWK;
  /** The public key as SPKI PEM. */
  pem: string;
}

/** An RS256 key pair (or ES256 with `alg`). */
export async function makeKey(kid: string, alg = 'RS256'): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, privateKey, publicKey, jwk, pem: await exportSPKI(publicKey) };
}

export const now = () => Math.floor(Date.now() / 1000);

/** Signs a token: `iss`, `aud`, `sub`, `iat`, `exp` (in 5 minutes) unless overridden. */
export function mint(
  key: TestKey | CryptoKey | Uint8Array,
  claims: Record<string, unknown> = {},
  header: Partial<JWTHeaderParameters> = {},
): Promise<string> {
  const signing = 'privateKey' in key ? key.privateKey : key;
  const kid = 'kid' in key ? key.kid : undefined;
  const alg = key instanceof Uint8Array ? 'HS256' : 'RS256';
  const t = now();
  const body: Record<string, unknown> = {
    iss: ISSUER,
    aud: AUDIENCE,
    sub: 'alice',
    iat: t,
    exp: t + 300,
  };
  for (const [name, value] of Object.entries(claims)) {
    if (value === undefined) delete body[name];
    else body[name] = value;
  }
  return new SignJWT(body as JWTPayload).setProtectedHeader({ alg, kid, ...header }).sign(signing);
}

/** A JWKS (and discovery document) server on 127.0.0.1 that counts its hits. */
export interface KeyServer {
  url: string;
  jwksUrl: string;
  /** Requests for the JWKS so far. */
  hits: number;
  /** Requests for the discovery document so far. */
  discoveryHits: number;
  keys: JWK[];
  /** When set, the JWKS answers 503. */
  down: boolean;
  /** Overrides of the discovery document. */
  discovery: Record<string, unknown>;
  close(): Promise<void>;
}

export async function startKeyServer(keys: JWK[], issuer?: string): Promise<KeyServer> {
  let server: Server;
  const state: KeyServer = {
    url: '',
    jwksUrl: '',
    hits: 0,
    discoveryHits: 0,
    keys,
    down: false,
    discovery: {},
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server = createServer((req, res) => {
    if (req.url === '/jwks') {
      state.hits++;
      if (state.down) {
        res.writeHead(503).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: state.keys }));
    } else if (req.url === '/.well-known/openid-configuration') {
      state.discoveryHits++;
      res.writeHead(200, { 'content-type': 'application/json' });
      const doc = { issuer: issuer ?? state.url, jwks_uri: state.jwksUrl, ...state.discovery };
      res.end(JSON.stringify(doc));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}`;
  state.jwksUrl = `${state.url}/jwks`;
  return state;
}

/** base64url of a JSON value or a string. */
export function b64(value: unknown): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString(
    'base64url',
  );
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
