import type { SenderComparison } from '../senders/types.js';

/** Signed webhook deliveries to a local receiver: a raw undici loop vs portico's sender. */
export const webhookComparison: SenderComparison = {
  kind: 'sender',
  name: 'webhook',
  title: 'webhook deliveries to a local receiver',
  description:
    'Each sender process delivers M POSTs to one receiver process (node:http on 127.0.0.1, ' +
    'answering `204` to every POST) over keep-alive connections, at most 10 in flight, every ' +
    'body `{"event":"bench.tick","type":"bench.tick","timestamp":…,"data":{round, seq, text}}` ' +
    '(about 290 bytes, `data` about 200). The floor is a plain loop of `undici.request` through ' +
    'one keep-alive `undici.Agent`, unsigned, each answer dumped. portico runs ' +
    '`createWebhookSender({ allowHttp: true, allowPrivate: true, concurrency: 10, ' +
    'perEndpointConcurrency: 10, schedule: [] })` with one endpoint and calls ' +
    "`sender.send('bench.tick', data)` once per delivery, each awaited, counting deliveries " +
    'from `onEvent`: every delivery is queued in the `MemoryWebhookStore`, signed (HMAC-SHA256, ' +
    'Standard Webhooks headers) and sent through the address-guarded agent; the no-guard row ' +
    'gives it its own `undici.Agent` as `dispatcher`, which bypasses the address guard, so ' +
    'the two rows part what the guard and what the queue and signing cost. Target: portico at ' +
    '80 % or more of the floor’s deliveries/s.',
  baseline: 'undici-raw',
  event: 'bench.tick',
  path: '/hooks/bench',
  concurrency: 10,
  profile: ['undici-raw', 'portico'],
  senders: [
    {
      name: 'undici-raw',
      label: 'raw undici.request loop (unsigned)',
      entry: 'bench/webhook/raw.ts',
      signed: false,
    },
    {
      name: 'portico',
      label: 'portico createWebhookSender',
      entry: 'bench/webhook/portico.ts',
      signed: true,
    },
    {
      name: 'portico-no-guard',
      label: 'portico, own undici.Agent (no address guard)',
      entry: 'bench/webhook/portico.ts',
      args: ['--no-guard'],
      signed: true,
    },
  ],
  notes: [
    'portico sends all M events first (each `send` awaited, as an application calls it per ' +
      'event), so its queue holds up to M pending deliveries while they go out; the raw loop ' +
      'has no queue. A round ends at the last delivery either way. M is 5,000 by default ' +
      '(`--deliveries M` to change it).',
    'Each portico delivery is signed (HMAC-SHA256), carries `user-agent` and the three ' +
      '`webhook-*` headers, goes through the queue (enqueue, claim with a lease, record the ' +
      'attempt) and is reported to `onEvent`; the raw loop posts the body with `content-type` ' +
      'only. portico POSTs with undici’s `dispatch` and a handler of its own (status and ' +
      '`Retry-After` only, the body read and dropped without a stream), where the raw loop ' +
      'pays for `undici.request`’s response stream and promise per answer.',
    'Before and after (issue 9): the first full run measured portico at 0.55 (0.54–0.68) of ' +
      'the floor, with 227 µs of sender CPU per delivery against the floor’s 131. Profiled ' +
      '(`node --cpu-prof`, and in-process against a stub dispatcher that answers 204 on the ' +
      'next turn, where portico’s own cost over the raw loop fell from about 95 µs to about ' +
      '15 µs per delivery), three causes were fixed in the library: the memory store evicted ' +
      'its oldest finished delivery and took its queues’ heads with `map.keys().next()`, which ' +
      'V8 makes step over every deleted slot (about 11 µs per delivery with 10,000 kept; now ' +
      'O(1), as in the other bounded caches); `undici.request` built a response stream and a ' +
      'dump promise per answer (now `dispatch` with a handler of its own); and every attempt ' +
      'set and cleared a timer (now one deadline watch per sender), with fewer copies and ' +
      'async hops besides.',
    'Where the remaining gap goes (issue 42; the profile table of the same run): portico’s own ' +
      'functions about 18 µs per delivery, spread over the queue (`enqueueEvent` building and ' +
      'stamping the body, the store’s `enqueue`, `claim` and `update` copying each delivery in ' +
      'and out, as a remote store would) with signing under 1 µs; and about 10 µs more of ' +
      'garbage collection, as up to M pending and 10,000 finished deliveries outlive the young ' +
      'generation. The raw loop spends more in undici (its `request` stream per answer).',
  ],
};
