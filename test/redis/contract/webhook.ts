// RedisWebhookStore, its queue on one shard or several: endpoints (admission, indexes,
// replacement, removal with their queued deliveries) and the leased delivery queue (claims
// bounded by `limit`, `perEndpoint` and `ordered`, outcomes, listings, the next due time),
// shared by two store instances on two clients.
import { expect } from 'vitest';
import { RedisWebhookStore } from '../../../src/redis/webhook-store.js';
import type {
  WebhookClaim,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookStore,
} from '../../../src/webhook/store.js';
import { asClient, type CheckContext, type CheckGroup } from './check.js';

const LEASE = 30_000;

export function webhookStore(
  { client, prefix }: Pick<CheckContext, 'client' | 'prefix'>,
  shards: number,
): RedisWebhookStore {
  return new RedisWebhookStore({ client: asClient(client()), prefix, shards });
}

export function endpoint(id: string, over: Partial<WebhookEndpoint> = {}): WebhookEndpoint {
  return {
    id,
    url: `https://hooks.example.com/${id}`,
    owner: 'mallory',
    secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    consecutiveFailures: 0,
    createdAt: Date.now(),
    ...over,
  };
}

/** A pending delivery of `endpointId` due at `at`, created at `createdAt`. */
export function delivery(
  id: string,
  endpointId: string,
  at: number,
  createdAt = at,
): WebhookDelivery {
  return {
    id,
    endpointId,
    event: 'message.created',
    body: JSON.stringify({ type: 'message.created', data: { id, text: 'hé "quoted" ✓' } }),
    state: 'pending',
    attempts: [],
    nextAttemptAt: at,
    createdAt,
  };
}

/** A claim at `now` with a generous bound unless told otherwise. */
const claimAt = (now: number, over: Partial<WebhookClaim> = {}): WebhookClaim => ({
  now,
  limit: 100,
  leaseMs: LEASE,
  perEndpoint: 100,
  ordered: false,
  ...over,
});

const idsOf = (items: readonly { id: string }[]) => items.map((item) => item.id);
const sortedIds = (items: readonly { id: string }[]) => idsOf(items).sort();

/** Claims until nothing more comes: every delivery claimed, in claim order. */
async function drain(store: WebhookStore, claim: WebhookClaim): Promise<WebhookDelivery[]> {
  const all: WebhookDelivery[] = [];
  for (let round = 0; round < 100; round++) {
    const got = await store.claim(claim);
    if (got.length === 0) return all;
    expect(got.length).toBeLessThanOrEqual(claim.limit);
    all.push(...got);
  }
  throw new Error('the queue never ran dry');
}

/** How many of `claimed` each endpoint has. */
function perEndpoint(claimed: readonly WebhookDelivery[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const d of claimed) counts[d.endpointId] = (counts[d.endpointId] ?? 0) + 1;
  return counts;
}

export function webhookChecks(shards: number): CheckGroup {
  const storeOf = (context: CheckContext) => webhookStore(context, shards);
  return {
    store: `RedisWebhookStore (shards: ${shards})`,
    checks: [
      {
        name: 'adds endpoints (added, duplicate, full) and lists them by owner and credential',
        async run(context) {
          const [a, b] = [storeOf(context), storeOf(context)];
          const t = Date.now();
          const limits = { maxPerOwner: 2 };
          const one = endpoint('ep_1', { createdAt: t, credentialIds: ['grant:g1'] });
          const two = endpoint('ep_2', {
            createdAt: t + 1,
            credentialIds: ['grant:g1', 'api_key:k1'],
          });
          expect(await a.addEndpoint(one, limits)).toBe('added');
          expect(await b.addEndpoint(two, limits)).toBe('added');
          expect(await b.addEndpoint(endpoint('ep_dup', { url: one.url }), limits)).toBe(
            'duplicate',
          );
          expect(await a.addEndpoint(endpoint('ep_3'), limits)).toBe('full');
          const bobs = endpoint('ep_bob', { owner: 'bob', url: one.url, createdAt: t + 2 });
          expect(await a.addEndpoint(bobs, limits)).toBe('added');
          const unowned = endpoint('ep_free', { owner: undefined, createdAt: t + 3 });
          expect(await b.addEndpoint(unowned, { maxPerOwner: 0 })).toBe('added');

          expect(await b.getEndpoint('ep_2')).toEqual(two);
          expect(await a.getEndpoint('ep_free')).toEqual(unowned);
          expect(await a.getEndpoint('ep_dup')).toBeUndefined();
          expect(await a.getEndpoint('ep_3')).toBeUndefined();
          for (const store of [a, b]) {
            expect(await store.listEndpoints()).toEqual([one, two, bobs, unowned]);
            expect(await store.listEndpoints({ owner: 'mallory' })).toEqual([one, two]);
            expect(await store.listEndpoints({ owner: 'bob' })).toEqual([bobs]);
            expect(await store.listEndpoints({ owner: 'nobody' })).toEqual([]);
            expect(await store.listEndpoints({ credentialId: 'grant:g1' })).toEqual([one, two]);
            expect(await store.listEndpoints({ credentialId: 'api_key:k1' })).toEqual([two]);
            expect(await store.listEndpoints({ owner: 'bob', credentialId: 'grant:g1' })).toEqual(
              [],
            );
          }
        },
      },
      {
        name: 'saves an endpoint, keeping what it is indexed by; never brings back a removed one',
        async run(context) {
          const [a, b] = [storeOf(context), storeOf(context)];
          const registered = endpoint('ep_s', { credentialIds: ['grant:g1'] });
          await a.addEndpoint(registered, { maxPerOwner: 5 });
          const changed: WebhookEndpoint = {
            ...registered,
            url: 'https://elsewhere.example.com/hook',
            owner: 'bob',
            credentialIds: ['grant:other'],
            secrets: ['whsec_new', ...registered.secrets],
            previousSecretsUntil: registered.createdAt + 86_400_000,
            disabled: 'failing',
            consecutiveFailures: 7,
          };
          expect(await b.saveEndpoint(changed)).toBe(true);
          expect(await a.getEndpoint('ep_s')).toEqual({
            ...changed,
            url: registered.url,
            owner: 'mallory',
            credentialIds: ['grant:g1'],
          });
          expect(idsOf(await a.listEndpoints({ owner: 'mallory' }))).toEqual(['ep_s']);
          expect(await a.listEndpoints({ owner: 'bob' })).toEqual([]);
          expect(idsOf(await a.listEndpoints({ credentialId: 'grant:g1' }))).toEqual(['ep_s']);

          expect(await a.deleteEndpoint('ep_s')).toBe(true);
          expect(await b.saveEndpoint(changed)).toBe(false);
          expect(await a.getEndpoint('ep_s')).toBeUndefined();
          expect(await b.saveEndpoint(endpoint('ep_never'))).toBe(false);
          expect(await b.getEndpoint('ep_never')).toBeUndefined();
          expect(await a.listEndpoints()).toEqual([]);
        },
      },
      {
        name: 'deletes an endpoint with its queued deliveries, and only those',
        async run(context) {
          const [a, b] = [storeOf(context), storeOf(context)];
          const t = Date.now();
          const names = ['ep_gone', 'ep_kept_1', 'ep_kept_2', 'ep_kept_3'];
          for (const [i, id] of names.entries()) {
            await a.addEndpoint(endpoint(id, { createdAt: t + i, credentialIds: ['grant:g'] }), {
              maxPerOwner: 10,
            });
          }
          const queued = names.flatMap((ep, i) => [
            delivery(`msg_${ep}_1`, ep, t, t + 2 * i),
            delivery(`msg_${ep}_2`, ep, t + 60_000, t + 2 * i + 1),
          ]);
          await a.enqueue(queued);
          // one of the deleted endpoint's deliveries is in flight
          const leased = await a.claim(claimAt(t, { limit: 100 }));
          expect(sortedIds(leased)).toEqual(names.map((ep) => `msg_${ep}_1`).sort());

          expect(await b.deleteEndpoint('ep_gone')).toBe(true);
          expect(await a.deleteEndpoint('ep_gone')).toBe(false);
          expect(await a.getEndpoint('ep_gone')).toBeUndefined();
          expect(idsOf(await a.listEndpoints())).toEqual(names.slice(1));
          expect(idsOf(await a.listEndpoints({ owner: 'mallory' }))).toEqual(names.slice(1));
          expect(idsOf(await a.listEndpoints({ credentialId: 'grant:g' }))).toEqual(names.slice(1));
          expect(await a.getDelivery('msg_ep_gone_1')).toBeUndefined();
          expect(await a.getDelivery('msg_ep_gone_2')).toBeUndefined();
          expect(await a.listDeliveries({ endpointId: 'ep_gone' })).toEqual([]);
          expect(idsOf(await b.listDeliveries())).toEqual(idsOf(queued).slice(2));
          expect(await b.getDelivery('msg_ep_kept_1_2')).toEqual(queued[3]);
          // what is left to claim belongs to the others only
          const later = await b.claim(claimAt(t + 120_000));
          expect(sortedIds(later)).toEqual(idsOf(queued).slice(2).sort());
          // its owner's place and URL are free again
          expect(await a.addEndpoint(endpoint('ep_gone'), { maxPerOwner: 4 })).toBe('added');
        },
      },
      {
        name: 'claims at most `limit` due deliveries at a time, each once, with its lease',
        async run(context) {
          const store = storeOf(context);
          const t = Date.now();
          const queued = Array.from({ length: 6 }, (_, e) =>
            Array.from({ length: 3 }, (_, i) =>
              delivery(`msg_${e}_${i}`, `ep_${e}`, t - 1_000 + i, t + 3 * e + i),
            ),
          ).flat();
          const later = [
            delivery('msg_later_a', 'ep_0', t + 60_000),
            delivery('msg_later_b', 'ep_5', t + 60_000),
          ];
          await store.enqueue([...queued, ...later]);

          const first = await store.claim(claimAt(t, { limit: 5 }));
          expect(first).toHaveLength(5);
          const byId = new Map(queued.map((d) => [d.id, d]));
          for (const d of first) {
            expect(d).toEqual({ ...byId.get(d.id), leaseUntil: t + LEASE });
          }
          const rest = await drain(store, claimAt(t, { limit: 5 }));
          const claimed = [...first, ...rest];
          expect(claimed).toHaveLength(18);
          expect(sortedIds(claimed)).toEqual(idsOf(queued).sort());
          expect(await store.claim(claimAt(t))).toEqual([]);
          // once the leases have run out, they are due again, and so are the later ones
          const again = await store.claim(claimAt(t + 60_000, { limit: 100 }));
          expect(sortedIds(again)).toEqual(idsOf([...queued, ...later]).sort());
          for (const d of again) expect(d.leaseUntil).toBe(t + 60_000 + LEASE);
        },
      },
      {
        name: 'keeps at most `perEndpoint` deliveries of an endpoint in flight',
        async run(context) {
          const store = storeOf(context);
          const t = Date.now();
          await store.enqueue([
            ...Array.from({ length: 5 }, (_, i) => delivery(`msg_a${i}`, 'ep_a', t, t + i)),
            delivery('msg_b0', 'ep_b', t, t + 5),
          ]);
          const first = await store.claim(claimAt(t, { perEndpoint: 2 }));
          expect(perEndpoint(first)).toEqual({ ep_a: 2, ep_b: 1 });
          expect(await store.claim(claimAt(t, { perEndpoint: 2 }))).toEqual([]);
          // one finished: room for one more
          const done = first.find((d) => d.endpointId === 'ep_a')!;
          await store.update({ ...done, state: 'delivered', attempts: [{ at: t, durationMs: 3 }] });
          const second = await store.claim(claimAt(t, { perEndpoint: 2 }));
          expect(perEndpoint(second)).toEqual({ ep_a: 1 });
          // leases that ran out no longer count
          const late = t + LEASE + 1;
          const third = await store.claim(claimAt(late, { perEndpoint: 2 }));
          expect(perEndpoint(third)).toEqual({ ep_a: 2, ep_b: 1 });
          expect(await store.claim(claimAt(late, { perEndpoint: 2 }))).toEqual([]);
        },
      },
      {
        name: 'claims only the oldest pending delivery of each endpoint when `ordered`',
        async run(context) {
          const store = storeOf(context);
          const t = Date.now();
          const ordered = (now: number) => claimAt(now, { ordered: true });
          await store.enqueue([
            delivery('msg_a1', 'ep_a', t, t),
            delivery('msg_b1', 'ep_b', t, t + 1),
          ]);
          await store.enqueue([delivery('msg_a2', 'ep_a', t, t + 2)]);
          await store.enqueue([
            delivery('msg_a3', 'ep_a', t, t + 3),
            delivery('msg_b2', 'ep_b', t, t + 4),
          ]);

          const heads = await store.claim(ordered(t));
          expect(sortedIds(heads)).toEqual(['msg_a1', 'msg_b1']);
          expect(await store.claim(ordered(t))).toEqual([]);
          const a1 = heads.find((d) => d.id === 'msg_a1')!;
          const b1 = heads.find((d) => d.id === 'msg_b1')!;
          await store.update({
            ...a1,
            state: 'delivered',
            attempts: [{ at: t, status: 204, durationMs: 4 }],
          });
          const next = await store.claim(ordered(t));
          expect(idsOf(next)).toEqual(['msg_a2']);
          // a2 waits for a retry: a3, due, stays behind it
          const retry = {
            ...next[0]!,
            nextAttemptAt: t + 10_000,
            attempts: [{ at: t, status: 500, durationMs: 4 }],
          };
          await store.update(retry);
          expect(await store.claim(ordered(t))).toEqual([]);
          await store.update({
            ...b1,
            state: 'failed',
            attempts: [{ at: t, error: 'timeout', durationMs: 9 }],
          });
          expect(idsOf(await store.claim(ordered(t)))).toEqual(['msg_b2']);
          const retried = await store.claim(ordered(t + 10_000));
          expect(retried).toEqual([{ ...retry, leaseUntil: t + 10_000 + LEASE }]);
          expect(await store.claim(ordered(t + 10_000))).toEqual([]);
        },
      },
      {
        name: 'records outcomes: a finished delivery is readable, listed by state, never claimed again',
        async run(context) {
          const [a, b] = [storeOf(context), storeOf(context)];
          const t = Date.now();
          const queued = [
            delivery('msg_1', 'ep_a', t, t),
            delivery('msg_2', 'ep_a', t, t + 1),
            delivery('msg_3', 'ep_b', t, t + 2),
            delivery('msg_4', 'ep_c', t, t + 3),
          ];
          await a.enqueue(queued);
          expect(sortedIds(await a.claim(claimAt(t)))).toEqual([
            'msg_1',
            'msg_2',
            'msg_3',
            'msg_4',
          ]);
          const delivered: WebhookDelivery = {
            ...queued[0]!,
            state: 'delivered',
            attempts: [{ at: t, status: 204, durationMs: 12 }],
            leaseUntil: t + LEASE,
          };
          const retrying: WebhookDelivery = {
            ...queued[1]!,
            nextAttemptAt: t + 5_000,
            attempts: [{ at: t, status: 500, durationMs: 8 }],
            leaseUntil: t + LEASE,
          };
          const failed: WebhookDelivery = {
            ...queued[2]!,
            state: 'failed',
            attempts: [
              { at: t, error: 'ECONNREFUSED', durationMs: 1 },
              { at: t + 1, status: 503, durationMs: 2 },
            ],
            leaseUntil: t + LEASE,
          };
          await b.update(delivered);
          await a.update(retrying);
          await b.update(failed);
          const stored = (d: WebhookDelivery) => ({ ...d, leaseUntil: undefined });

          const read = await a.getDelivery('msg_1');
          expect(read).toEqual(stored(delivered));
          expect(read?.leaseUntil).toBeUndefined();
          expect(await b.getDelivery('msg_2')).toEqual(stored(retrying));
          expect(await b.getDelivery('msg_3')).toEqual(stored(failed));
          expect(await b.getDelivery('msg_4')).toEqual(queued[3]);
          expect(await b.getDelivery('msg_never')).toBeUndefined();

          const all = [stored(delivered), stored(retrying), stored(failed), queued[3]];
          expect(await b.listDeliveries()).toEqual(all);
          expect(await a.listDeliveries({ state: 'delivered' })).toEqual([stored(delivered)]);
          expect(await a.listDeliveries({ state: 'failed' })).toEqual([stored(failed)]);
          expect(idsOf(await a.listDeliveries({ state: 'pending' }))).toEqual(['msg_2', 'msg_4']);
          expect(idsOf(await a.listDeliveries({ endpointId: 'ep_a' }))).toEqual(['msg_1', 'msg_2']);
          expect(idsOf(await a.listDeliveries({ endpointId: 'ep_a', state: 'pending' }))).toEqual([
            'msg_2',
          ]);
          expect(idsOf(await a.listDeliveries({ endpointId: 'ep_b' }))).toEqual(['msg_3']);
          expect(await a.listDeliveries({ endpointId: 'ep_b', state: 'delivered' })).toEqual([]);
          expect(await a.listDeliveries({ endpointId: 'ep_none' })).toEqual([]);

          // msg_4 stays leased; msg_2 is due again at its retry; the finished ones never
          expect(await a.claim(claimAt(t + 1_000))).toEqual([]);
          expect(idsOf(await b.claim(claimAt(t + 5_000)))).toEqual(['msg_2']);
          const far = await a.claim(claimAt(t + 10 * LEASE));
          expect(sortedIds(far)).toEqual(['msg_2', 'msg_4']);
        },
      },
      {
        name: 'tells when the next delivery is due, over every queue',
        async run(context) {
          const [a, b] = [storeOf(context), storeOf(context)];
          expect(await a.nextDue?.()).toBeUndefined();
          const t = Date.now();
          await a.enqueue([
            delivery('msg_a', 'ep_a', t + 5_000),
            delivery('msg_b', 'ep_b', t + 1_000),
            delivery('msg_c', 'ep_c', t + 3_000),
          ]);
          expect(await b.nextDue?.()).toBe(t + 1_000);
          const [claimed] = await b.claim(claimAt(t + 1_000, { leaseMs: 10_000 }));
          expect(claimed?.id).toBe('msg_b');
          // a lease is due when it runs out
          expect(await a.nextDue?.()).toBe(t + 3_000);
          await a.update({ ...claimed!, state: 'delivered' });
          expect(await a.nextDue?.()).toBe(t + 3_000);
          const rest = await a.claim(claimAt(t + 5_000, { leaseMs: 10_000 }));
          expect(sortedIds(rest)).toEqual(['msg_a', 'msg_c']);
          expect(await b.nextDue?.()).toBe(t + 15_000);
          for (const d of rest) await b.update({ ...d, state: 'failed' });
          expect(await b.nextDue?.()).toBeUndefined();
        },
      },
      {
        name: 'two store instances on two clients never claim the same delivery',
        async run(context) {
          const stores = [storeOf(context), storeOf(context)];
          const t = Date.now();
          const queued = Array.from({ length: 8 }, (_, e) =>
            Array.from({ length: 5 }, (_, i) =>
              delivery(`msg_${e}_${i}`, `ep_${e}`, t, t + 5 * e + i),
            ),
          ).flat();
          await stores[0]!.enqueue(queued.slice(0, 20));
          await stores[1]!.enqueue(queued.slice(20));
          const claims = await Promise.all(
            Array.from({ length: 20 }, (_, i) => stores[i % 2]!.claim(claimAt(t, { limit: 3 }))),
          );
          for (const got of claims) expect(got.length).toBeLessThanOrEqual(3);
          const claimed = claims.flat();
          // each once, and all of them: a claim coming back short found every queue empty
          expect(claimed).toHaveLength(40);
          expect(sortedIds(claimed)).toEqual(idsOf(queued).sort());
          for (const store of stores) expect(await store.claim(claimAt(t))).toEqual([]);
        },
      },
      {
        name: 'two store instances claiming at once keep `perEndpoint` between them',
        async run(context) {
          const stores = [storeOf(context), storeOf(context)];
          const t = Date.now();
          const queued = Array.from({ length: 8 }, (_, e) =>
            Array.from({ length: 4 }, (_, i) =>
              delivery(`msg_${e}_${i}`, `ep_${e}`, t, t + 4 * e + i),
            ),
          ).flat();
          await stores[0]!.enqueue(queued);
          const claims = await Promise.all(
            Array.from({ length: 16 }, (_, i) =>
              stores[i % 2]!.claim(claimAt(t, { limit: 4, perEndpoint: 1 })),
            ),
          );
          const claimed = claims.flat();
          expect(new Set(idsOf(claimed)).size).toBe(claimed.length);
          expect(perEndpoint(claimed)).toEqual(
            Object.fromEntries(Array.from({ length: 8 }, (_, e) => [`ep_${e}`, 1])),
          );
        },
      },
    ],
  };
}
