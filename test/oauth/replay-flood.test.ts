// Issue 37: one address floods the authorization server's stores of one-time ids with refused
// requests (valid DPoP proofs and client assertions, refused for their grant or their access
// token): nothing is recorded, so good proofs and assertions are still accepted after it. Each
// store gives a DPoP key, or a client, a share of its room; of two uses of one proof or
// assertion racing, one wins.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryReplayStore } from '../../src/auth/replay/store.js';
import { closeAll, json, type Listening } from '../helpers/http.js';
import {
  assertionForm,
  callApi,
  clientAssertion,
  dpopProof,
  errorOf,
  floods,
  type Key,
  keyClientToken,
  newKey,
  postToken,
  type ReplayStores,
  replayClients,
  startReplayServer,
} from './replay-fixtures.js';

let clientKey: Key;
let otherClientKey: Key;
let proofKeys: Key[];

beforeAll(async () => {
  clientKey = await newKey('key-client-1');
  otherClientKey = await newKey('other-key-client-1');
  proofKeys = await Promise.all([1, 2, 3, 4].map(() => newKey()));
});
afterAll(closeAll);

/** Stores of 200 ids each (a share of 20 per key or client): a flood of 400 would fill them. */
const smallStores = (): ReplayStores => ({
  assertions: new MemoryReplayStore({ maxEntries: 200 }),
  dpop: new MemoryReplayStore({ maxEntries: 200 }),
});

async function start(stores = smallStores()): Promise<Listening> {
  const clients = replayClients({ 'key-client': clientKey, 'other-key-client': otherClientKey });
  return (await startReplayServer(clients, stores)).server;
}

/** A DPoP-bound token of key-client, for `key`. */
async function boundToken(server: Listening, key: Key): Promise<string> {
  const reply = await keyClientToken(server, 'key-client', clientKey, key);
  expect(reply.status, reply.body).toBe(200);
  expect(json(reply).token_type).toBe('DPoP');
  return json<{ access_token: string }>(reply).access_token;
}

/** A good proof at /token and at /api, and a good assertion, are accepted. */
async function expectGoodOnesAccepted(server: Listening): Promise<void> {
  const key = await newKey();
  const token = await boundToken(server, key);
  const me = await callApi(server, token, key);
  expect(me.status, me.body).toBe(200);
  expect(json(me).method).toBe('dpop');
  const plain = await keyClientToken(server, 'other-key-client', otherClientKey);
  expect(plain.status, plain.body).toBe(200);
}

describe('one address flooding the one-time-id stores with refused requests', () => {
  it('records no DPoP proof refused with its grant at /token: good ones pass after 400', async () => {
    const server = await start();
    const statuses = await floods(server, clientKey, proofKeys).tokenProofs(400);
    expect(Object.fromEntries(statuses)).toEqual({ 400: 400 });
    await expectGoodOnesAccepted(server);
  });

  it('records no DPoP proof whose access token is refused at /api: good ones pass after 400', async () => {
    const server = await start();
    const statuses = await floods(server, clientKey, proofKeys).apiProofs(400);
    expect(Object.fromEntries(statuses)).toEqual({ 401: 400 });
    await expectGoodOnesAccepted(server);
  });

  it('records no DPoP proof of a refused push at /par: good ones pass after 400', async () => {
    const server = await start();
    const statuses = await floods(server, clientKey, proofKeys).pushProofs(400);
    expect(Object.fromEntries(statuses)).toEqual({ 400: 400 });
    await expectGoodOnesAccepted(server);
  });

  it('records no client assertion whose grant is refused: good ones pass after 400', async () => {
    const server = await start();
    const statuses = await floods(server, clientKey, proofKeys).assertions(400);
    expect(Object.fromEntries(statuses)).toEqual({ 400: 400 });
    await expectGoodOnesAccepted(server);
  });
});

describe('a share of each store per DPoP key and per client', () => {
  it('refuses a client past its share of the assertion store (429), not another client', async () => {
    const server = await start();
    for (let i = 0; i < 20; i++) {
      expect((await keyClientToken(server, 'key-client', clientKey)).status).toBe(200);
    }
    const spent = await keyClientToken(server, 'key-client', clientKey);
    expect(spent.status, spent.body).toBe(429);
    expect(errorOf(spent)).toBe('temporarily_unavailable');
    expect(Number(spent.headers['retry-after'])).toBeGreaterThan(0);
    expect((await keyClientToken(server, 'other-key-client', otherClientKey)).status).toBe(200);
  });

  it('refuses a DPoP key past its share of the proof store (429), not another key', async () => {
    const server = await start();
    const [first, second] = [await newKey(), await newKey()];
    const token = await boundToken(server, first); // one id of `first`
    for (let i = 1; i < 20; i++) expect((await callApi(server, token, first)).status).toBe(200);
    const spent = await callApi(server, token, first);
    expect(spent.status, spent.body).toBe(429);
    expect(spent.headers['content-type']).toBe('application/problem+json');
    expect(Number(spent.headers['retry-after'])).toBeGreaterThan(0);
    const other = await boundToken(server, second);
    expect((await callApi(server, other, second)).status).toBe(200);
  });
});

describe('two uses of one proof or assertion at once', () => {
  it('lets one of two requests with one proof through at /api; the other is 401', async () => {
    const server = await start();
    const key = await newKey();
    const token = await boundToken(server, key);
    const proof = await dpopProof(key, token);
    const replies = await Promise.all([1, 2].map(() => callApi(server, token, key, proof)));
    expect(replies.map((r) => r.status).sort()).toEqual([200, 401]);
    const refused = replies.find((r) => r.status === 401)!;
    expect(refused.headers['www-authenticate']).toContain('error="invalid_dpop_proof"');
  });

  it('lets one of two token requests with one proof through; the other is invalid_dpop_proof', async () => {
    const server = await start();
    const key = await newKey();
    const proof = await dpopProof(key);
    const replies = await Promise.all(
      [1, 2].map(() => keyClientToken(server, 'key-client', clientKey, undefined, { DPoP: proof })),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(errorOf(replies.find((r) => r.status === 400)!)).toBe('invalid_dpop_proof');
  });

  it('lets one of two token requests with one assertion through; the other is invalid_client', async () => {
    const server = await start();
    const form = assertionForm(await clientAssertion('key-client', clientKey));
    const replies = await Promise.all([1, 2].map(() => postToken(server, form)));
    expect(replies.map((r) => r.status).sort()).toEqual([200, 401]);
    expect(errorOf(replies.find((r) => r.status === 401)!)).toBe('invalid_client');
    // and once accepted, it stays refused
    const again = await postToken(server, form);
    expect([again.status, errorOf(again)]).toEqual([401, 'invalid_client']);
  });

  it('refuses an assertion used once already before its grant is looked at (invalid_client)', async () => {
    const server = await start();
    const form = assertionForm(await clientAssertion('key-client', clientKey));
    expect((await postToken(server, form)).status).toBe(200);
    // replayed with a grant that would be refused: the replay is what is answered, not the
    // grant's own error (a store that can tell a known id refuses it before any other check)
    const replayed = await postToken(server, { ...form, scope: 'admin:everything' });
    expect([replayed.status, errorOf(replayed)]).toEqual([401, 'invalid_client']);
    const fresh = await postToken(server, {
      ...assertionForm(await clientAssertion('key-client', clientKey)),
      scope: 'admin:everything',
    });
    expect([fresh.status, errorOf(fresh)]).toEqual([400, 'invalid_scope']);
  });
});
