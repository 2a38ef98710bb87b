// On a cluster, what has no reason to share a slot does not: rate-limit keys, broker channels
// and webhook queue shards land on every primary. The keys are those the stores write (see
// their sources); the stores are driven through their public methods, and only the keys'
// places are looked up (`primaryOf`).
import { expect } from 'vitest';
import { RedisRateLimitStore } from '../../../src/redis/rate-limit-store.js';
import { withBrokers } from './broker.js';
import { asClient, type CheckGroup, primariesOf } from './check.js';
import { delivery, webhookStore } from './webhook.js';

/**
 * The prefix of the webhook spread check. Eight shard keys fall on three primaries only most of
 * the time (one prefix in eight leaves a primary out): this one's eight `{spread:wh:q<i>:}`
 * tags hash to slots of all three ranges of a cluster made by `redis-cli --cluster create`
 * (three equal ranges), so the check does not hang on the luck of a counter.
 */
const WEBHOOK_SPREAD_PREFIX = 'spread:wh:';

export const spreadChecks: CheckGroup = {
  store: 'spread over the primaries',
  checks: [
    {
      name: '30 rate-limit keys land on all three primaries',
      clusterOnly: true,
      async run(context) {
        const { client, prefix } = context;
        const store = new RedisRateLimitStore({ client: asClient(client()), prefix });
        const keys = Array.from({ length: 30 }, (_, i) => `ip:10.0.0.${i}`);
        const counts = await Promise.all(keys.map((key) => store.increment(key, 60_000)));
        expect(counts.map((hit) => hit.count)).toEqual(keys.map(() => 1));
        expect(
          await primariesOf(
            context,
            keys.map((key) => prefix + key),
          ),
        ).toBe(3);
      },
    },
    {
      name: '30 broker channels land on all three primaries',
      clusterOnly: true,
      async run(context) {
        await withBrokers(context, async (a, b) => {
          const channels = Array.from({ length: 30 }, (_, i) => `channel-${i}`);
          const sent = await Promise.all(
            channels.map((channel) => a.publish(channel, { event: 'n', data: channel })),
          );
          expect(sent.map((m) => m.offset)).toEqual(channels.map(() => 1));
          const positions = await Promise.all(channels.map((channel) => b.position(channel)));
          expect(positions.map((p) => p.offset)).toEqual(channels.map(() => 1));
          const keys = channels.map((channel) => `${context.prefix}{ch:${channel}}:seq`);
          expect(await primariesOf(context, keys)).toBe(3);
        });
      },
    },
    {
      name: 'a webhook store’s 8 queue shards land on all three primaries',
      clusterOnly: true,
      async run(context) {
        const prefix = WEBHOOK_SPREAD_PREFIX;
        const store = webhookStore({ client: context.client, prefix }, 8);
        const t = Date.now();
        // 64 endpoints: the store spreads their deliveries over its shards (the shard is its choice)
        const queued = Array.from({ length: 64 }, (_, e) =>
          delivery(`msg_${context.prefix}${e}`, `ep_${context.prefix}${e}`, t, t + e),
        );
        await store.enqueue(queued);
        const claimed = await store.claim({
          now: t,
          limit: 100,
          leaseMs: 30_000,
          perEndpoint: 1,
          ordered: false,
        });
        const ours = new Set(queued.map((d) => d.id));
        expect(claimed.filter((d) => ours.has(d.id))).toHaveLength(64);
        const shards = Array.from({ length: 8 }, (_, i) => `{${prefix}q${i}:}due`);
        expect(await primariesOf(context, shards)).toBe(3);
      },
    },
  ],
};
