// Refused grants and refused DPoP proofs at /token count against the credential guard, as a
// failed client authentication does: once an address has spent its budget, its next request,
// a good one included, is 429 temporarily_unavailable; another address is served. A device
// still waiting for its user (authorization_pending, slow_down) spends nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCredentialGuard } from '../../src/auth/credential-guard.js';
import { MemoryReplayStore } from '../../src/auth/replay/store.js';
import { createTokenEndpoint } from '../../src/oauth/endpoints/token.js';
import { DEVICE_CODE_GRANT } from '../../src/oauth/grants/device-code.js';
import { closeAll, type Listening, serve } from '../helpers/http.js';
import {
  dpopProof,
  errorOf,
  type Key,
  keyClientToken,
  newKey,
  postToken,
  replayClients,
  startReplayServer,
} from './replay-fixtures.js';
import { plantDeviceCode, startTokenServer } from './token-fixtures.js';

const LIMIT = 3;
const guardOptions = { limit: LIMIT, windowMs: 60_000, trustProxy: 'loopback' } as const;
let server: Listening;
let clientKey: Key;

beforeAll(async () => {
  clientKey = await newKey('key-client-1');
  const clients = replayClients({ 'key-client': clientKey, 'other-key-client': await newKey('o') });
  const stores = { assertions: new MemoryReplayStore(), dpop: new MemoryReplayStore() };
  const guard = createCredentialGuard(guardOptions);
  ({ server } = await startReplayServer(clients, stores, { guard }));
});
afterAll(closeAll);

let addresses = 0;
/** A fresh client address, as the trusted (loopback) proxy reports it. */
const from = () => ({ 'X-Forwarded-For': `198.51.100.${++addresses}` });

const madeUpCode = (ip: Record<string, string>) =>
  postToken(
    server,
    {
      grant_type: 'authorization_code',
      client_id: 'demo-spa',
      code: 'not-a-code',
      code_verifier: 'v'.repeat(43),
      redirect_uri: 'http://127.0.0.1:5173/callback',
    },
    ip,
  );

describe('the credential guard at /token', () => {
  it('counts refused grants: the next request from the address is 429, another is served', async () => {
    const ip = from();
    for (let i = 0; i < LIMIT; i++) expect(errorOf(await madeUpCode(ip))).toBe('invalid_grant');
    const good = await keyClientToken(server, 'key-client', clientKey, undefined, ip);
    expect([good.status, errorOf(good)]).toEqual([429, 'temporarily_unavailable']);
    expect(Number(good.headers['retry-after'])).toBeGreaterThan(0);
    expect((await keyClientToken(server, 'key-client', clientKey, undefined, from())).status).toBe(
      200,
    );
  });

  it('counts refused DPoP proofs the same way', async () => {
    const ip = from();
    const key = await newKey();
    const stale = await dpopProof(key);
    expect(
      (await keyClientToken(server, 'key-client', clientKey, undefined, { ...ip, DPoP: stale }))
        .status,
    ).toBe(200);
    for (let i = 0; i < LIMIT; i++) {
      // the same proof again: a replay, refused
      const replayed = await keyClientToken(server, 'key-client', clientKey, undefined, {
        ...ip,
        DPoP: stale,
      });
      expect(errorOf(replayed)).toBe('invalid_dpop_proof');
    }
    const good = await keyClientToken(server, 'key-client', clientKey, key, ip);
    expect(good.status).toBe(429);
  });

  it('spends nothing while a device waits for its user', async () => {
    const guard = createCredentialGuard(guardOptions);
    const { ctx } = await startTokenServer({ guard });
    const device = await serve(createTokenEndpoint(ctx));
    const { deviceCode } = await plantDeviceCode(ctx);
    const ip = from();
    const poll = () =>
      postToken(
        device,
        { grant_type: DEVICE_CODE_GRANT, device_code: deviceCode, client_id: 'demo-device' },
        ip,
      );
    const errors = [];
    for (let i = 0; i < LIMIT + 2; i++) errors.push(errorOf(await poll()));
    expect(errors).toEqual(['authorization_pending', ...Array(LIMIT + 1).fill('slow_down')]);
  });
});
