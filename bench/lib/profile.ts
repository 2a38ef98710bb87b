/**
 * Where a server's CPU goes under the comparison's own load: after the measured rounds, the
 * servers a comparison names in `profile` are started once more under `node --cpu-prof`,
 * warmed up and loaded round-robin as in the rounds, stopped, and their main thread's CPU
 * profile summed by where each sample fell (the socket writes' system calls, node's HTTP and
 * streams, portico, the app, garbage collection…) and, for portico's and the app's own
 * functions, function by function, in µs per request, over the measured loads only (start-up
 * and warm-up left out). The profiler's own cost is in every figure (a sample per millisecond
 * costs little, but each function call it sees costs some), so the figures compare servers
 * profiled alike, not the rounds' CPU per request.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningServer, runLoad, startServer } from './processes.js';
import type { LoadOptions, ProfileSummary, ServerSpec } from './types.js';

/** The part of V8's `.cpuprofile` format read here. */
export interface CpuProfile {
  startTime: number;
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** Where the samples of one call frame count. */
type Category =
  | 'socket writes (system calls)'
  | 'node (HTTP, streams, events, crypto)'
  | 'portico'
  | 'the app'
  | 'dependencies'
  | 'garbage collection'
  | 'V8 and native code';

/** What is not the server's work under load: waiting, and loading modules at start-up. */
const OUTSIDE = 'outside';

const SOCKET_WRITES = new Set([
  'writev',
  'writeBuffer',
  'writeUtf8String',
  'writeLatin1String',
  'writeAsciiString',
]);

function categoryOf(functionName: string, url: string): Category | typeof OUTSIDE {
  if (functionName === '(idle)') return OUTSIDE;
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (url === '') {
    return SOCKET_WRITES.has(functionName) ? 'socket writes (system calls)' : 'V8 and native code';
  }
  if (url.startsWith('node:internal/modules') || url.includes('/node_modules/tsx/')) return OUTSIDE;
  if (url.startsWith('node:')) return 'node (HTTP, streams, events, crypto)';
  if (url.includes('/node_modules/portico/')) return 'portico'; // installed
  if (url.includes('/node_modules/') || url.startsWith('wasm://')) return 'dependencies';
  if (url.includes('/dist/') || url.includes('/src/')) return 'portico'; // this checkout's
  return 'the app';
}

/** Where a function is, for the function list: portico's build is one name, the app's files their path. */
function placeOf(url: string, category: Category): string {
  if (category === 'portico') return 'portico';
  const at = url.search(/\/(examples|bench)\//);
  return at === -1 ? url : url.slice(at + 1);
}

/** A span of the monotonic clock in µs, which V8 stamps its profiles with, as `process.hrtime`. */
export type Window = readonly [from: number, to: number];

/** Now on the monotonic clock V8's CPU profiles are stamped with, in µs. */
export const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * The summary of `profile`'s samples taken in `windows` (all of them without), spread over
 * the `requests` answered then.
 */
export function summarizeProfile(
  server: string,
  profile: CpuProfile,
  requests: number,
  windows?: readonly Window[],
  functionCount = 12,
): ProfileSummary {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const categories = new Map<Category, number>();
  const functions = new Map<string, { name: string; where: string; us: number }>();
  let time = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const us = profile.timeDeltas[i] ?? 0;
    time += us;
    if (windows !== undefined && !windows.some(([from, to]) => time >= from && time <= to)) {
      continue;
    }
    const frame = frames.get(profile.samples[i]!);
    if (frame === undefined) continue;
    const category = categoryOf(frame.functionName, frame.url);
    if (category === OUTSIDE) continue;
    categories.set(category, (categories.get(category) ?? 0) + us);
    if (category !== 'portico' && category !== 'the app') continue;
    const name = frame.functionName || '(anonymous)';
    const where = placeOf(frame.url, category);
    const key = `${name} ${frame.url}:${frame.lineNumber}`;
    const entry = functions.get(key) ?? { name, where, us: 0 };
    entry.us += us;
    functions.set(key, entry);
  }
  const perRequest = (us: number) => us / Math.max(1, requests);
  const busy = [...categories.values()].reduce((sum, us) => sum + us, 0);
  return {
    server,
    requests,
    busyUsPerRequest: perRequest(busy),
    categories: [...categories]
      .sort((a, b) => b[1] - a[1])
      .map(([name, us]) => ({ name, usPerRequest: perRequest(us) })),
    functions: [...functions.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, functionCount)
      .map(({ name, where, us }) => ({ name, where, usPerRequest: perRequest(us) })),
  };
}

/** The largest `.cpuprofile` in `dir`: the main thread's (tsx's loader thread writes its own). */
export function mainThreadProfile(dir: string): CpuProfile {
  const files = readdirSync(dir).filter((file) => file.endsWith('.cpuprofile'));
  if (files.length === 0) throw new Error(`no CPU profile was written in ${dir}`);
  const sized = files.map((file) => ({ file, size: statSync(join(dir, file)).size }));
  sized.sort((a, b) => b.size - a.size);
  return JSON.parse(readFileSync(join(dir, sized[0]!.file), 'utf8')) as CpuProfile;
}

/** A server to profile, and the environment it is started with. */
export interface ProfileTarget {
  spec: ServerSpec;
  env: Readonly<Record<string, string>>;
}

/**
 * Starts every target under `--cpu-prof` side by side, warms each up with `loadFor(port,
 * warmupSeconds)` (when > 0), then loads them round-robin as the rounds do (`rounds` ×
 * `loadFor(port, seconds)`, the order rotating), stops them (each profile is written as its
 * process exits) and summarises each over the loads it was measured in.
 */
export async function profileServers(
  targets: readonly ProfileTarget[],
  loadFor: (name: string, port: number, seconds: number) => LoadOptions,
  settings: { rounds: number; durationSeconds: number; warmupSeconds: number },
): Promise<ProfileSummary[]> {
  const dirs = targets.map(() => mkdtempSync(join(tmpdir(), 'portico-bench-profile-')));
  const running: RunningServer[] = [];
  try {
    for (const [i, { spec, env }] of targets.entries()) {
      running.push(await startServer(spec, ['--cpu-prof', `--cpu-prof-dir=${dirs[i]}`], env));
    }
    const load = (server: RunningServer, seconds: number) =>
      runLoad(loadFor(server.spec.name, server.port, seconds));
    if (settings.warmupSeconds > 0) {
      for (const server of running) await load(server, settings.warmupSeconds);
    }
    const windows = running.map((): Window[] => []);
    const requests = running.map(() => 0);
    for (let round = 0; round < settings.rounds; round++) {
      for (let i = 0; i < running.length; i++) {
        const at = (i + round) % running.length;
        const from = monotonicUs();
        requests[at]! += (await load(running[at]!, settings.durationSeconds)).requests;
        windows[at]!.push([from, monotonicUs()]);
      }
    }
    await Promise.all(running.splice(0).map((server) => server.stop()));
    return targets.map(({ spec }, i) =>
      summarizeProfile(spec.name, mainThreadProfile(dirs[i]!), requests[i]!, windows[i]),
    );
  } finally {
    await Promise.all(running.map((server) => server.stop()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}
