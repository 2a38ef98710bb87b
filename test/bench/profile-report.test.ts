// The profile table of `npm run bench` (bench/lib/profile-report.ts) and the missed-target line
// that cites it (bench/lib/targets.ts), for a sender comparison: per delivery, not per request.
import { expect, it } from 'vitest';
import { renderProfiles } from '../../bench/lib/profile-report.js';
import { renderTargets } from '../../bench/lib/targets.js';
import type { SenderResult } from '../../bench/senders/types.js';

const spread = (median: number) => ({ median, min: median, max: median });
const sender = (name: string, label: string, ratio: number) => ({
  name,
  label,
  deliveriesPerSec: spread(10_000 * ratio),
  latencyP50Ms: 1,
  latencyP99Ms: 2,
  senderCpuUsPerDelivery: 60 / ratio,
  receiverCpuUsPerDelivery: 20,
  ratio: spread(ratio),
});

const PROFILES = [
  {
    server: 'undici-raw',
    requests: 25_000,
    busyUsPerRequest: 58.9,
    categories: [
      { name: 'dependencies', usPerRequest: 23.6 },
      { name: 'garbage collection', usPerRequest: 5.1 },
    ],
    functions: [],
  },
  {
    server: 'portico',
    requests: 25_000,
    busyUsPerRequest: 82.5,
    categories: [
      { name: 'portico', usPerRequest: 18.1 },
      { name: 'dependencies', usPerRequest: 14 },
      { name: 'garbage collection', usPerRequest: 13.4 },
    ],
    functions: [{ name: 'enqueueEvent', where: 'portico', usPerRequest: 3.1 }],
  },
];

/** A webhook sender result whose portico row delivers `ratio` × the raw loop. */
const webhook = (ratio: number, profiles = PROFILES) =>
  ({
    kind: 'sender',
    name: 'webhook',
    title: 'signed webhook deliveries',
    servers: [sender('undici-raw', 'raw undici loop', 1), sender('portico', 'portico', ratio)],
    profiles,
  }) as unknown as SenderResult;

it('renders the senders’ profiles per delivery, a dash where a sender has no such samples', () => {
  const table = renderProfiles(webhook(0.7), 'delivery');
  expect(table).toContain('the senders below were started once more after the rounds');
  expect(table).toContain('| µs per delivery, from a CPU profile | raw undici loop | portico |');
  expect(table).toContain('| portico | – | 18.1 |');
  expect(table).toContain('| garbage collection | 5.1 | 13.4 |');
  expect(table).toContain(
    '| **all of it** (idle time and module loading left out) | **58.9** | **82.5** |',
  );
  expect(table).toContain('- portico, 25,000 deliveries: `enqueueEvent` (portico) 3.1');
  expect(table).not.toContain('per request');
});

it('renders nothing for a run that profiled no sender', () => {
  expect(renderProfiles(webhook(0.7, []), 'delivery')).toBe('');
});

it('explains a missed webhook target with the same run’s profile, per delivery', () => {
  const targets = renderTargets([webhook(0.7)]);
  const miss = targets.split('\n').find((line) => line.startsWith('- `webhook`'));
  expect(miss).toContain('sender CPU per delivery 60 µs raw, 86 µs portico.');
  expect(miss).toContain('58.9 → 82.5 µs of CPU per delivery');
  expect(miss).toContain('portico 0.0 → 18.1');
  expect(miss).toContain('`enqueueEvent`');
});

it('leaves the profile out of a met target', () => {
  const targets = renderTargets([webhook(0.9)]);
  expect(targets).toContain('| yes |');
  expect(targets).not.toContain('µs of CPU per delivery');
});
