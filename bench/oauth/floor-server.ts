/**
 * The floor servers of the `oauth` comparison: plain node:http issuing the same access token
 * with no framework. Each compares the `Authorization` header with the one expected
 * (constant time, no hashing), reads the body and compares it with the one expected, builds
 * the claims and has them signed RS256 (2048-bit key made at start) by the `sign` it is
 * given. What is left is the RSA signature and HTTP itself. It checks nothing a real server
 * must (no parameter parsing, no scope policy): a floor, not a competitor.
 */
import { createPublicKey, type KeyObject, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import { serve } from '../lib/serve.js';
import {
  ACCESS_TOKEN_TTL,
  AUDIENCE,
  basicAuthorization,
  CLIENT_ID,
  CLIENT_SECRET,
  ISSUER,
  SCOPE,
  TOKEN_REQUEST_BODY,
} from './shared.js';

export const KID = 'bench-rs256';
/** The protected header of every token. */
export const HEADER = { alg: 'RS256', typ: 'at+jwt', kid: KID } as const;

/** The claims of one access token. */
export type Claims = Record<string, string | number>;

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
  });
  res.end(body);
}

/** Serves `POST /token` (and the public key at `GET /jwks`), signing with `sign`. */
export function serveFloor(privateKey: KeyObject, sign: (claims: Claims) => Promise<string>) {
  const jwks = JSON.stringify({
    keys: [
      {
        ...createPublicKey(privateKey).export({ format: 'jwk' }),
        kid: KID,
        use: 'sig',
        alg: 'RS256',
      },
    ],
  });
  const expectedAuthorization = Buffer.from(basicAuthorization(CLIENT_ID, CLIENT_SECRET));

  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/jwks') {
      send(res, 200, jwks);
      return;
    }
    if (req.method !== 'POST' || req.url !== '/token') {
      send(res, 404, '{"error":"not_found"}');
      return;
    }
    const given = Buffer.from(req.headers.authorization ?? '');
    const authorized =
      given.length === expectedAuthorization.length &&
      timingSafeEqual(given, expectedAuthorization);
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      if (body.length < 1024) body += chunk;
    });
    req.on('end', () => {
      if (!authorized) return send(res, 401, '{"error":"invalid_client"}');
      if (body !== TOKEN_REQUEST_BODY) return send(res, 400, '{"error":"invalid_request"}');
      const now = Math.floor(Date.now() / 1000);
      const claims = {
        iss: ISSUER,
        sub: CLIENT_ID,
        aud: AUDIENCE,
        iat: now,
        exp: now + ACCESS_TOKEN_TTL,
        jti: randomUUID(),
        client_id: CLIENT_ID,
        scope: SCOPE,
      };
      sign(claims).then(
        (token) =>
          send(
            res,
            200,
            JSON.stringify({
              access_token: token,
              token_type: 'Bearer',
              expires_in: ACCESS_TOKEN_TTL,
              scope: SCOPE,
            }),
          ),
        () => send(res, 500, '{"error":"server_error"}'),
      );
    });
  });

  serve(server);
}
