// A provider whose answers the test chooses, on 127.0.0.1: an OpenID Provider (discovery,
// JWKS, an authorization endpoint that answers at once, a token endpoint whose ID token can be
// of another audience, another nonce or another key), or a plain OAuth 2.0 server shaped like
// GitHub's (no discovery, no ID token, `GET /user`). It can also answer slowly or with garbage.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

export type TokenAnswer =
  | 'good'
  | 'other-audience'
  | 'other-nonce'
  | 'other-issuer'
  | 'bad-signature'
  | 'expired'
  | 'garbage'
  | 'slow'
  | 'server-error';

export interface StandIn {
  url: string;
  /** What the next token request is answered with. */
  answer: TokenAnswer;
  /** The token requests received (their form bodies, Authorization and DPoP headers). */
  tokenRequests: { body: URLSearchParams; authorization: string | undefined; dpop?: string }[];
  /** `expires_in` of client-credentials tokens. */
  expiresIn: number;
  /** How long the token endpoint waits before answering (ms). */
  delay: number;
  /** The answers to the device-code polls, in order (`tokens` ends with tokens). */
  devicePolls: (
    | 'authorization_pending'
    | 'slow_down'
    | 'access_denied'
    | 'expired_token'
    | 'tokens'
  )[];
  /** When each device-code poll arrived (epoch ms). */
  devicePolledAt: number[];
  close(): Promise<void>;
}

/** A stand-in provider; `kind: 'github'` has no discovery and no ID token. */
export async function startStandIn(kind: 'oidc' | 'github' = 'oidc'): Promise<StandIn> {
  const key = await generateKeyPair('RS256');
  const stranger = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(key.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const codes = new Map<string, { nonce?: string; clientId: string }>();
  const open = new Set<import('node:net').Socket>();
  let url = '';
  const state: StandIn = {
    url: '',
    answer: 'good',
    tokenRequests: [],
    expiresIn: 300,
    delay: 0,
    devicePolls: [],
    devicePolledAt: [],
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
  const idToken = async (code: { nonce?: string; clientId: string }) => {
    const answer = state.answer;
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      nonce: answer === 'other-nonce' ? 'another' : code.nonce,
      name: 'Stan In',
    })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(answer === 'other-issuer' ? 'https://other.test' : url)
      .setAudience(answer === 'other-audience' ? 'another-client' : code.clientId)
      .setSubject('stan')
      .setIssuedAt(answer === 'expired' ? now - 7200 : now)
      .setExpirationTime(answer === 'expired' ? now - 3600 : now + 300)
      .sign(answer === 'bad-signature' ? stranger.privateKey : key.privateKey);
  };
  const server = createServer(async (req, res) => {
    const at = new URL(req.url ?? '/', url);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    if (at.pathname === '/.well-known/openid-configuration' && kind === 'oidc') {
      return json(200, {
        issuer: url,
        authorization_endpoint: `${url}/authorize`,
        token_endpoint: `${url}/token`,
        jwks_uri: `${url}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256'],
        device_authorization_endpoint: `${url}/device_authorization`,
      });
    }
    if (at.pathname === '/jwks') return json(200, { keys: [jwk] });
    if (at.pathname === '/device_authorization' && req.method === 'POST') {
      return json(200, {
        device_code: 'dc-1',
        user_code: 'WDJB-MJHT',
        verification_uri: `${url}/device`,
        verification_uri_complete: `${url}/device?user_code=WDJB-MJHT`,
        expires_in: 600,
        interval: 1,
      });
    }
    if (at.pathname === '/authorize') {
      // signs the user in at once and sends the browser back
      const code = `code-${codes.size + 1}`;
      codes.set(code, {
        clientId: at.searchParams.get('client_id') ?? '',
        ...(at.searchParams.has('nonce') && { nonce: at.searchParams.get('nonce')! }),
      });
      const back = new URL(at.searchParams.get('redirect_uri') ?? '/');
      back.searchParams.set('code', code);
      back.searchParams.set('state', at.searchParams.get('state') ?? '');
      res.writeHead(302, { location: back.href });
      return res.end();
    }
    if (at.pathname === '/token' && req.method === 'POST') {
      let text = '';
      for await (const chunk of req) text += chunk;
      const body = new URLSearchParams(text);
      const dpop = req.headers.dpop as string | undefined;
      state.tokenRequests.push({ body, authorization: req.headers.authorization, dpop });
      if (state.delay > 0) await new Promise((resolve) => setTimeout(resolve, state.delay));
      const code = codes.get(body.get('code') ?? '');
      if (state.answer === 'slow') return; // never answers: the client's timeout must end it
      if (state.answer === 'garbage') {
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end('<html>maintenance</html>');
      }
      if (state.answer === 'server-error') return json(503, { error: 'temporarily_unavailable' });
      if (body.get('grant_type') === 'urn:ietf:params:oauth:grant-type:device_code') {
        state.devicePolledAt.push(Date.now());
        const next = state.devicePolls.shift() ?? 'authorization_pending';
        if (next !== 'tokens') return json(400, { error: next });
        return json(200, {
          access_token: 'at-device',
          token_type: 'Bearer',
          expires_in: 300,
          refresh_token: 'rt-device',
        });
      }
      if (body.get('grant_type') === 'client_credentials') {
        return json(200, {
          access_token: `cc-${state.tokenRequests.length}`,
          token_type: dpop === undefined ? 'Bearer' : 'DPoP',
          expires_in: state.expiresIn,
          ...(body.has('scope') && { scope: body.get('scope') }),
        });
      }
      if (code === undefined) return json(400, { error: 'invalid_grant' });
      return json(200, {
        access_token: `at-${body.get('code')}`,
        token_type: 'Bearer',
        expires_in: 300,
        ...(kind === 'oidc' && { id_token: await idToken(code) }),
        ...(kind === 'github' && { scope: 'read:user' }),
      });
    }
    if (at.pathname === '/user' && kind === 'github') {
      if (req.headers.authorization?.startsWith('Bearer at-') !== true) {
        return json(401, { message: 'Bad credentials' });
      }
      return json(200, { id: 4242, login: 'octo', name: 'Octo Cat' });
    }
    json(404, { error: 'not_found' });
  });
  server.on('connection', (socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.url = url;
  return state;
}
