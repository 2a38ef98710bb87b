// The CPU-profile summary of `npm run bench` (bench/lib/profile.ts) on a profile made by hand:
// samples counted by where they fell, idle time and module loading left out, the window of
// the last load only, portico's and the app's functions by self time, per request.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { monotonicUs, summarizeProfile } from '../../bench/lib/profile.js';

const frame = (id: number, functionName: string, url: string) => ({
  id,
  callFrame: { functionName, url, lineNumber: 0 },
});
const NODES = [
  frame(1, '(idle)', ''),
  frame(2, 'writev', ''),
  frame(3, '(garbage collector)', ''),
  frame(4, 'sendJson', 'file:///app/node_modules/portico/dist/chunk-A.js'),
  frame(5, 'GET', 'file:///app/examples/reference-server/account.ts'),
  frame(6, '_storeHeader', 'node:_http_outgoing'),
  frame(7, 'resolve', 'node:internal/modules/esm/resolve'),
  frame(8, 'write', 'file:///app/node_modules/pino/lib/proto.js'),
];

/** A profile of `samples` (node ids), one every `step` µs. */
const profile = (samples: number[], step = 100) => ({
  startTime: 0,
  nodes: NODES,
  samples,
  timeDeltas: samples.map(() => step),
});

it('sums the busy samples by category over the requests, idle and module loading left out', () => {
  const summary = summarizeProfile('s', profile([1, 2, 2, 3, 4, 4, 4, 5, 6, 7, 8, 1]), 10);
  expect(summary.busyUsPerRequest).toBe(90); // 9 busy samples of 100 µs over 10 requests
  expect(summary.categories).toEqual([
    { name: 'portico', usPerRequest: 30 },
    { name: 'socket writes (system calls)', usPerRequest: 20 },
    { name: 'garbage collection', usPerRequest: 10 },
    { name: 'the app', usPerRequest: 10 },
    { name: 'node (HTTP, streams, events, crypto)', usPerRequest: 10 },
    { name: 'dependencies', usPerRequest: 10 },
  ]);
  expect(summary.functions).toEqual([
    { name: 'sendJson', where: 'portico', usPerRequest: 30 },
    { name: 'GET', where: 'examples/reference-server/account.ts', usPerRequest: 10 },
  ]);
});

it('counts only the samples taken in the windows of the measured loads (warm-up left out)', () => {
  // warm-up: five portico samples (at 100–500 µs), a pause, then the measured load: two
  // writes and a GET (at 800–1000 µs), and a garbage collection after it
  const samples = [4, 4, 4, 4, 4, 1, 1, 2, 2, 5, 3, 1];
  const summary = summarizeProfile('s', profile(samples), 3, [[750, 1050]]);
  expect(summary.busyUsPerRequest).toBe(100);
  expect(summary.categories.map((c) => c.name)).toEqual([
    'socket writes (system calls)',
    'the app',
  ]);
});

it('reads the clock V8 stamps its profiles with (windows taken here fall on their samples)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-profile-clock-'));
  try {
    const before = monotonicUs();
    execFileSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '-e', '1']);
    const after = monotonicUs();
    const [file] = readdirSync(dir);
    const { startTime, endTime } = JSON.parse(readFileSync(join(dir, file!), 'utf8'));
    expect(startTime).toBeGreaterThanOrEqual(before);
    expect(endTime).toBeLessThanOrEqual(after);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
