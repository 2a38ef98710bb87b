// createEndpointProofs() called as a function, over a real socket: the request's DPoP proof
// checked and its jti recorded at once (the same proof again is a replay), none without a
// DPoP header.
import { afterAll, describe, expect, it } from 'vitest';
import { createSessions } from '../../../src/auth/session/session.js';
import type { Middleware } from '../../../src/core/compose.js';
import { sendJson } from '../../../src/core/send.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { createOAuthContext } from '../../../src/oauth/context.js';
import { OAuthError, sendOAuthError } from '../../../src/oauth/protocol/errors.js';
import { createEndpointProofs } from '../../../src/oauth/shared/endpoint-proof.js';
import { createKeySet } from '../../../src/oauth/tokens/key-set.js';
import { closeAll, json, request, serve } from '../../helpers/http.js';
import { dpopProof, newKey } from '../replay-fixtures.js';
import { ISSUER } from '../token-fixtures.js';

afterAll(closeAll);

describe('createEndpointProofs()(req)', () => {
  it('answers the checked proof and records its jti, and undefined without a proof', async () => {
    const ctx = createOAuthContext({
      issuer: ISSUER,
      clients: new MemoryClientStore([]),
      keys: await createKeySet({ algorithm: 'EdDSA' }),
      users: { verify: () => undefined, get: () => undefined },
      sessions: createSessions({ allowedOrigins: [ISSUER] }),
    });
    const endpointProof = createEndpointProofs(ctx);
    const endpoint: Middleware = async (req, res) => {
      try {
        const proof = await endpointProof(req);
        sendJson(
          res,
          200,
          proof === undefined ? { none: true } : { jkt: proof.jkt, alg: proof.alg },
        );
      } catch (error) {
        if (!(error instanceof OAuthError)) throw error;
        sendOAuthError(res, error);
      }
    };
    const server = await serve(endpoint);
    const key = await newKey();
    const proof = await dpopProof(key);
    const post = (headers: Record<string, string>) =>
      request(server, '/token', { method: 'POST', headers });
    const first = await post({ DPoP: proof });
    expect(first.status, first.body).toBe(200);
    expect(json(first)).toEqual({ jkt: key.jkt, alg: 'ES256' });
    const replayed = await post({ DPoP: proof });
    expect(replayed.status).toBe(400);
    expect(json(replayed).error).toBe('invalid_dpop_proof');
    const none = await post({});
    expect(none.status, none.body).toBe(200);
    expect(json(none)).toEqual({ none: true });
  });
});
