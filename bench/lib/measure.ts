/**
 * Runs one comparison: starts every server in its own process, checks each answers the
 * request as expected, warms each up, then measures them round-robin (the order rotating
 * every round) with one load-generator process per measurement.
 */
import { processCpuTimes } from './cpu.js';
import { mergeHeaders } from './headers.js';
import {
  measureInProcess,
  nodeCommand,
  type RunningServer,
  runLoad,
  startServer,
} from './processes.js';
import { profileServers } from './profile.js';
import { spread } from './stats.js';
import type {
  Comparison,
  InProcessResult,
  LoadOptions,
  LoadResult,
  Measurement,
  ProfileSummary,
  RunSettings,
  ServerSpec,
  ServerSummary,
  Spread,
} from './types.js';
import { SAME_BYTES_VARIABLE } from './types.js';
import { captureAnswer, verifyFloor, verifyServer } from './verify.js';

const log = (line: string) => process.stderr.write(`${line}\n`);

/** The answers of `result` with one of the `allowed` statuses. */
function allowedAnswers(result: LoadResult, allowed: readonly number[] = []): number {
  return allowed.reduce((sum, status) => sum + (result.statusCodes[String(status)] ?? 0), 0);
}

/** Rejects a measurement with a non-2xx answer (other than `allowed`) or connection error. */
function assertClean(server: string, result: LoadResult, allowed?: readonly number[]): void {
  const unexpected = result.non2xx - allowedAnswers(result, allowed);
  if (unexpected === 0 && result.errors === 0 && result.timeouts === 0 && result.requests > 0) {
    return;
  }
  throw new Error(
    `${server}: ${result.requests} requests, ${result.non2xx} non-2xx, ${result.errors} errors, ` +
      `${result.timeouts} timeouts (status codes ${JSON.stringify(result.statusCodes)}); ` +
      'the servers do not answer the same way, so the numbers would not compare',
  );
}

function loadOptions(
  comparison: Comparison,
  port: number,
  settings: RunSettings,
  seconds: number,
  headers: Record<string, string> = { ...comparison.request.headers },
): LoadOptions {
  return {
    url: `http://127.0.0.1:${port}${comparison.request.path}`,
    method: comparison.request.method,
    headers,
    ...(comparison.request.body !== undefined && { body: comparison.request.body }),
    connections: settings.connections,
    pipelining: settings.pipelining,
    durationSeconds: seconds,
  };
}

/** The load generator's command line as run (its port varies). */
export function loadCommandLine(comparison: Comparison, settings: RunSettings): string {
  const example = loadOptions(comparison, 0, settings, settings.durationSeconds);
  return nodeCommand('bench/lib/load.ts', [
    `'${JSON.stringify(example).replace(':0/', ':<port>/')}'`,
  ]);
}

/** Per round, each measurement's req/s over `reference`'s in the same round. */
function ratiosTo(
  reference: string,
  own: readonly Measurement[],
  measurements: readonly Measurement[],
): Spread {
  const byRound = new Map<number, number>();
  for (const m of measurements) if (m.server === reference) byRound.set(m.round, m.reqPerSec);
  return spread(own.map((m) => m.reqPerSec / (byRound.get(m.round) ?? Number.NaN)));
}

/** The median of `values`, or null when one of them is (a round measured without procfs). */
function medianOrNull(values: readonly (number | null | undefined)[]): number | null {
  if (values.some((v) => typeof v !== 'number')) return null;
  return spread(values as number[]).median;
}

export function summarize(
  comparison: Comparison,
  measurements: readonly Measurement[],
): ServerSummary[] {
  const secondary = comparison.secondaryBaseline;
  return comparison.servers.map((spec) => {
    const own = measurements.filter((m) => m.server === spec.name);
    return {
      name: spec.name,
      label: spec.label,
      reqPerSec: spread(own.map((m) => m.reqPerSec)),
      latencyP50Ms: spread(own.map((m) => m.latencyP50Ms)).median,
      latencyP99Ms: spread(own.map((m) => m.latencyP99Ms)).median,
      serverCpuUsPerRequest: medianOrNull(own.map((m) => m.serverCpuUsPerRequest)),
      serverSystemCpuUsPerRequest: medianOrNull(own.map((m) => m.serverSystemCpuUsPerRequest)),
      ratio: ratiosTo(comparison.baseline, own, measurements),
      ...(secondary !== undefined && { secondaryRatio: ratiosTo(secondary, own, measurements) }),
      ...(comparison.allowStatuses !== undefined && {
        allowedShare: spread(
          own.map((m) => allowedAnswers(m, comparison.allowStatuses) / Math.max(1, m.requests)),
        ).median,
      }),
    };
  });
}

/** What one comparison's run measured: each round of each server, and the profiles after. */
export interface ComparisonRun {
  measurements: Measurement[];
  profiles: ProfileSummary[];
  inProcess?: InProcessResult;
}

export async function measureComparison(
  comparison: Comparison,
  settings: RunSettings,
): Promise<ComparisonRun> {
  const variables = (await comparison.setup?.()) ?? {};
  try {
    return await measureWith(comparison, settings, variables);
  } finally {
    await comparison.teardown?.();
  }
}

/** The comparison's server named `name`. */
function specNamed(comparison: Comparison, name: string): ServerSpec {
  const spec = comparison.servers.find((s) => s.name === name);
  if (spec === undefined) throw new Error(`${comparison.name}: no server named ${name}`);
  return spec;
}

/**
 * Starts `specs` side by side (each is a process of its own), adds them to `running` (to be
 * stopped whatever happens), then checks each answers as expected.
 */
async function startChecked(
  specs: readonly ServerSpec[],
  comparison: Comparison,
  env: Readonly<Record<string, string>>,
  running: RunningServer[],
): Promise<void> {
  const started = await Promise.allSettled(specs.map((spec) => startServer(spec, [], env)));
  for (const outcome of started) if (outcome.status === 'fulfilled') running.push(outcome.value);
  for (const outcome of started) if (outcome.status === 'rejected') throw outcome.reason;
  for (const outcome of started) {
    if (outcome.status !== 'fulfilled') continue;
    const { spec, port } = outcome.value;
    const problems = await verifyServer(port, spec, comparison, env);
    if (problems.length > 0) {
      throw new Error(`${spec.name} does not answer as expected:\n  - ${problems.join('\n  - ')}`);
    }
    log(`  ${spec.name}: listening on 127.0.0.1:${port}, answer checked`);
  }
}

async function measureWith(
  comparison: Comparison,
  settings: RunSettings,
  variables: Readonly<Record<string, string>>,
): Promise<ComparisonRun> {
  // What each server is sent: the comparison's headers and its own (a same-bytes floor, its
  // target's), variables expanded.
  const targetOf = (spec: ServerSpec) =>
    spec.sameBytesAs === undefined ? spec : specNamed(comparison, spec.sameBytesAs);
  const headersOf = new Map(
    comparison.servers.map((spec) => [
      spec.name,
      mergeHeaders(comparison.request.headers, targetOf(spec).requestHeaders, variables),
    ]),
  );
  const optionsFor = (server: RunningServer, seconds: number) =>
    loadOptions(comparison, server.port, settings, seconds, headersOf.get(server.spec.name));
  const running: RunningServer[] = [];
  /** The environment each server was started with (a floor's carries its target's answer). */
  const envOf = new Map<string, Readonly<Record<string, string>>>();
  try {
    const floors = comparison.servers.filter((spec) => spec.sameBytesAs !== undefined);
    const measured = comparison.servers.filter((spec) => spec.sameBytesAs === undefined);
    await startChecked(measured, comparison, variables, running);
    // Then each floor, given what its target answered just now, and checked to write it back
    for (const spec of floors) {
      const target = running.find((server) => server.spec.name === spec.sameBytesAs);
      if (target === undefined) throw new Error(`${spec.name}: no server ${spec.sameBytesAs}`);
      const headers = headersOf.get(target.spec.name)!;
      const answer = await captureAnswer(target.port, comparison, headers);
      const env = { ...variables, [SAME_BYTES_VARIABLE]: JSON.stringify(answer) };
      const floor = await startServer(spec, [], env);
      running.push(floor);
      envOf.set(spec.name, env);
      const problems = await verifyFloor(floor.port, comparison, headers, answer);
      if (problems.length > 0) {
        throw new Error(
          `${spec.name} does not answer as expected:\n  - ${problems.join('\n  - ')}`,
        );
      }
      log(
        `  ${spec.name}: listening on 127.0.0.1:${floor.port}, writes ${target.spec.name}'s answer`,
      );
    }
    // measured in the comparison's order
    const order = (server: RunningServer) =>
      comparison.servers.findIndex((s) => s.name === server.spec.name);
    running.sort((a, b) => order(a) - order(b));
    if (settings.warmupSeconds > 0) {
      for (const server of running) {
        const opts = optionsFor(server, settings.warmupSeconds);
        const result = await runLoad(opts);
        assertClean(server.spec.name, result, comparison.allowStatuses);
        log(`  warm-up ${server.spec.name}: ${Math.round(result.reqPerSec)} req/s (discarded)`);
      }
    }
    const measurements: Measurement[] = [];
    for (let round = 0; round < settings.rounds; round++) {
      for (let i = 0; i < running.length; i++) {
        const server = running[(i + round) % running.length]!;
        const opts = optionsFor(server, settings.durationSeconds);
        const cpuBefore = processCpuTimes(server.pid);
        const result = await runLoad(opts);
        const cpuAfter = processCpuTimes(server.pid);
        assertClean(server.spec.name, result, comparison.allowStatuses);
        const perRequest = (seconds: number) => (seconds * 1e6) / result.requests;
        const measured = cpuBefore !== undefined && cpuAfter !== undefined;
        const serverSystemCpuUsPerRequest = measured
          ? perRequest(cpuAfter.system - cpuBefore.system)
          : null;
        const serverCpuUsPerRequest = measured
          ? perRequest(cpuAfter.user - cpuBefore.user) + (serverSystemCpuUsPerRequest ?? 0)
          : null;
        measurements.push({
          server: server.spec.name,
          round,
          ...result,
          serverCpuUsPerRequest,
          serverSystemCpuUsPerRequest,
        });
        log(
          `  round ${round + 1}/${settings.rounds} ${server.spec.name}: ` +
            `${Math.round(result.reqPerSec)} req/s, p50 ${result.latencyP50Ms} ms, p99 ${result.latencyP99Ms} ms` +
            (serverCpuUsPerRequest === null
              ? ''
              : `, server CPU ${serverCpuUsPerRequest.toFixed(1)} µs/req`),
        );
      }
    }
    await Promise.all(running.splice(0).map((server) => server.stop()));
    const targets = (comparison.profile ?? []).map((name) => ({
      spec: specNamed(comparison, name),
      env: envOf.get(name) ?? variables,
    }));
    const profiles =
      targets.length === 0
        ? []
        : await profileServers(
            targets,
            (name, port, seconds) =>
              loadOptions(comparison, port, settings, seconds, headersOf.get(name)),
            settings,
          );
    for (const profile of profiles) {
      log(
        `  profile ${profile.server}: ${profile.busyUsPerRequest.toFixed(1)} µs busy per request`,
      );
    }
    const inProcess =
      comparison.inProcess === undefined ? undefined : await measureInProcess(comparison.inProcess);
    return { measurements, profiles, ...(inProcess !== undefined && { inProcess }) };
  } finally {
    await Promise.all(running.map((server) => server.stop()));
  }
}
