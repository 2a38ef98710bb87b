// An upstream provider with tls_client_auth (RFC 8705): discovery and the token request go
// through an agent presenting the client certificate; a provider on HTTPS that requires it
// answers the token only to that certificate, and the client sends no secret.
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientCredentials } from '../../src/client/machine-tokens.ts';
import { upstreamProvider } from '../../src/client/provider.ts';
import { closeAll, type Listening, listen } from '../helpers/http.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
const ca = fixture('ca.pem');
const seen: { cn: unknown; authorized: boolean; body: string }[] = [];
let server: Listening;

beforeAll(async () => {
  let issuer = '';
  const https = createHttpsServer(
    {
      cert: fixture('server.pem'),
      key: fixture('server.key'),
      ca,
      requestCert: true,
      rejectUnauthorized: false,
    },
    async (req, res) => {
      const socket = req.socket as TLSSocket;
      let body = '';
      for await (const chunk of req) body += chunk;
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.url === '/.well-known/openid-configuration') {
        return json(200, {
          issuer,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
        });
      }
      seen.push({
        cn: socket.getPeerCertificate()?.subject?.CN,
        authorized: socket.authorized,
        body,
      });
      if (!socket.authorized) return json(401, { error: 'invalid_client' });
      json(200, { access_token: 'mtls-token', token_type: 'Bearer', expires_in: 60 });
    },
  );
  server = await listen(https);
  issuer = server.url;
});
afterAll(closeAll);

describe('tls_client_auth at an upstream provider', () => {
  it('presents the client certificate and sends no secret', async () => {
    const tokens = clientCredentials({
      provider: upstreamProvider({
        name: 'mtls',
        issuer: server.url,
        clientId: 'alice-service',
        tls: { cert: fixture('client.pem'), key: fixture('client.key'), ca },
      }),
    });
    expect(await tokens.token()).toBe('mtls-token');
    const request = seen.at(-1)!;
    expect(request).toMatchObject({ cn: 'alice', authorized: true });
    const body = new URLSearchParams(request.body);
    expect(body.get('client_id')).toBe('alice-service');
    expect(body.has('client_secret')).toBe(false);
  });

  it('without the certificate (and the CA), no token: the source reports the failure', async () => {
    const tokens = clientCredentials({
      provider: upstreamProvider({
        name: 'plain',
        issuer: server.url,
        clientId: 'alice-service',
        clientSecret: 'not-a-certificate',
      }),
    });
    await expect(tokens.token()).rejects.toMatchObject({ code: 'ERR_TOKEN_UNAVAILABLE' });
  });
});
