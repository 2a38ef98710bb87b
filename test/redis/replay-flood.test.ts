// Issue 37 with Redis: one address floods the authorization server's RedisReplayStores (one
// prefix for DPoP proofs, one for client assertions) with refused requests carrying valid
// proofs and assertions: Redis holds no key of theirs afterwards, good ones are accepted and
// recorded each under its own prefix, and of two uses of one proof racing, one wins.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisReplayStore } from '../../src/redis/replay-store.js';
import { closeAll, json, type Listening } from '../helpers/http.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import {
  callApi,
  clientAssertion,
  dpopProof,
  floods,
  type Key,
  keyClientToken,
  newKey,
  postToken,
  replayClients,
  startReplayServer,
} from '../oauth/replay-fixtures.js';

describe.skipIf(!hasRedis)('a flood of refused requests against RedisReplayStores', () => {
  let redis: RedisServer;
  let raw: Redis;
  let server: Listening;
  let clientKey: Key;
  let proofKeys: Key[];
  const keysOf = async (kind: string) => (await raw.keys(`flood:${kind}:*`)).length;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    clientKey = await newKey('key-client-1');
    proofKeys = await Promise.all([1, 2, 3].map(() => newKey()));
    const clients = replayClients({ 'key-client': clientKey, 'other-key-client': await newKey() });
    const stores = {
      assertions: new RedisReplayStore({ client: redis.client(), prefix: 'flood:assertion:' }),
      dpop: new RedisReplayStore({ client: redis.client(), prefix: 'flood:dpop:' }),
    };
    ({ server } = await startReplayServer(clients, stores));
  });
  afterAll(async () => {
    await closeAll();
    await redis?.stop();
  });

  it('records nothing for 300 of each, then records good ones under their own prefixes', async () => {
    const flood = floods(server, clientKey, proofKeys);
    expect(Object.fromEntries(await flood.tokenProofs(300))).toEqual({ 400: 300 });
    expect(Object.fromEntries(await flood.apiProofs(300))).toEqual({ 401: 300 });
    expect(Object.fromEntries(await flood.assertions(300))).toEqual({ 400: 300 });
    expect(await raw.keys('flood:*')).toEqual([]);

    const key = await newKey();
    const issued = await keyClientToken(server, 'key-client', clientKey, key);
    expect(issued.status, issued.body).toBe(200);
    const token = json<{ access_token: string }>(issued).access_token;
    const me = await callApi(server, token, key);
    expect([me.status, json(me).method]).toEqual([200, 'dpop']);
    expect({ dpop: await keysOf('dpop'), assertion: await keysOf('assertion') }).toEqual({
      dpop: 2,
      assertion: 1,
    });
  });

  it('lets one of two uses of one proof, and of one assertion, through', async () => {
    const key = await newKey();
    const proof = await dpopProof(key);
    const tokens = await Promise.all(
      [1, 2].map(() => keyClientToken(server, 'key-client', clientKey, undefined, { DPoP: proof })),
    );
    expect(tokens.map((r) => r.status).sort()).toEqual([200, 400]);
    const token = json<{ access_token: string }>(
      tokens.find((r) => r.status === 200)!,
    ).access_token;
    const apiProof = await dpopProof(key, token);
    const calls = await Promise.all([1, 2].map(() => callApi(server, token, key, apiProof)));
    expect(calls.map((r) => r.status).sort()).toEqual([200, 401]);
    const form = {
      grant_type: 'client_credentials',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: await clientAssertion('key-client', clientKey),
    };
    const replies = await Promise.all([1, 2].map(() => postToken(server, form)));
    expect(replies.map((r) => r.status).sort()).toEqual([200, 401]);
  });
});
