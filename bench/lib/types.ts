/** Shapes (and the default unit) shared by the orchestrator, the load generator and the report. */

/** One server under test: a script that listens on 127.0.0.1, port 0, and prints its port. */
export interface ServerSpec {
  /** Short id, used in results and command lines. */
  name: string;
  /** What the table calls it. */
  label: string;
  /** The server script, relative to the repository root. */
  entry: string;
  /** Response headers (lower-case names) that prove the stack did its work. */
  expectHeaders?: Readonly<Record<string, string>>;
  /**
   * Request headers for this server only, over the comparison's (its credential, say).
   * `$NAME` in a value stands for the variable `NAME` of the comparison's {@link Comparison.setup}.
   */
  requestHeaders?: Readonly<Record<string, string>>;
  /** The body this server must answer, when not the comparison's `expect.body`. */
  expectBody?: string;
  /**
   * Requests this server must answer 401, each given as its headers over the comparison's
   * (`$NAME` expanded as in {@link ServerSpec.requestHeaders}): proves a credential is
   * really checked before the server is measured.
   */
  refuses?: readonly Readonly<Record<string, string>>[];
  /**
   * This row is the same-bytes floor of the server named here: plain node:http writing byte
   * for byte what that server answered just before measuring (status, header lines, body),
   * in one raw `writeHead` (`entry` is then [`bench/lib/same-bytes.ts`](bench/lib/same-bytes.ts):
   * see `sameBytesFloor` in bench/lib/verify.ts). It is sent that server's request headers.
   */
  sameBytesAs?: string;
}

/** The request every server in a comparison is loaded with. */
export interface RequestSpec {
  method: string;
  path: string;
  headers: Readonly<Record<string, string>>;
  /** The request body, sent as is (give its `content-type` in `headers`). */
  body?: string;
}

/** How the tables and charts count: `{ rate: 'tokens/s', each: 'token' }`, say. */
export interface Unit {
  /** The throughput's unit. */
  rate: string;
  /** One of them, for CPU time per one. */
  each: string;
}

/** The default {@link Unit}. */
export const REQUESTS: Unit = { rate: 'req/s', each: 'req' };

/** One answer of a server, as the check before measuring sees it. */
export interface Answer {
  status: number;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The header lines as sent, names in their case: `[name, value, name, value, …]`. */
  rawHeaders: readonly string[];
  /** The body as UTF-8 text. */
  body: string;
  /** The body's bytes. */
  bytes: Uint8Array;
}

/** The environment variable handing a same-bytes floor its {@link CapturedAnswer} (JSON). */
export const SAME_BYTES_VARIABLE = 'BENCH_SAME_BYTES';

/** What a same-bytes floor answers: a server's answer as it was sent ({@link ServerSpec.sameBytesAs}). */
export interface CapturedAnswer {
  method: string;
  path: string;
  status: number;
  /** Its header lines but those node writes itself (`Date`, `Connection`, `Keep-Alive`). */
  headers: string[];
  /** Its body's bytes, in base64. */
  body: string;
}

/** A set of servers answering the same request, measured against a baseline. */
export interface Comparison {
  /** Request/response load (the default); fan-out comparisons say `'fanout'`. */
  kind?: 'request';
  name: string;
  title: string;
  /** One paragraph for BENCHMARKS.md. */
  description: string;
  /** The `name` of the server the ratios are taken against. */
  baseline: string;
  /** A second server to give ratios against, in a column of their own. */
  secondaryBaseline?: string;
  servers: readonly ServerSpec[];
  request: RequestSpec;
  /**
   * What every server must answer before it is measured: the status, and the exact body or,
   * for answers that differ each time (a new token), a `check` returning the problems found.
   */
  expect: {
    status: number;
    body?: string;
    check?: (
      answer: Answer,
      server: {
        spec: ServerSpec;
        port: number;
        /** The comparison's setup variables (a Redis URL, say), for checks beyond the answer. */
        variables: Readonly<Record<string, string>>;
      },
    ) => Promise<string[]>;
  };
  /** What one request makes, for the tables and charts. @defaultValue {@link REQUESTS} */
  unit?: Unit;
  /**
   * Statuses other than 2xx that are answers under this load, not faults (a load-shedding
   * server's 503): accepted, and shown as each server's share of the answers.
   */
  allowStatuses?: readonly number[];
  /** Choices worth stating next to the table. */
  notes?: readonly string[];
  /**
   * Runs in the orchestrator once, before the servers start, and returns variables (keys or
   * tokens minted for this run): every server gets them in its environment, and `$NAME` in
   * request headers stands for them. Their values are never written to the results.
   */
  setup?: () => Promise<Readonly<Record<string, string>>>;
  /**
   * Servers to profile after the rounds (`node --cpu-prof`, one more load of a round's
   * length): where their CPU goes, in the result's `profiles` and the section's table.
   */
  profile?: readonly string[];
  /**
   * A script measuring the comparison's request path in-process (no sockets), run after the
   * profiles with `report`: it prints one {@link InProcessResult} as JSON.
   */
  inProcess?: string;
  /**
   * Runs in the orchestrator once the servers have stopped, whether the run succeeded or not
   * (when `setup` succeeded): stops what `setup` started (a Redis server, say).
   */
  teardown?: () => Promise<void>;
}

/** What `bench/lib/load.ts` is given (as one JSON argument). */
export interface LoadOptions {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  connections: number;
  pipelining: number;
  durationSeconds: number;
}

/** What `bench/lib/load.ts` prints (one JSON line). */
export interface LoadResult {
  requests: number;
  durationSeconds: number;
  reqPerSec: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyAvgMs: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
}

/** One measured round of one server. */
export interface Measurement extends LoadResult {
  server: string;
  round: number;
  /** The server process's CPU time (user + system) per completed request; null without procfs. */
  serverCpuUsPerRequest: number | null;
  /** Its system (kernel) part; null without procfs, absent from results made before it was. */
  serverSystemCpuUsPerRequest?: number | null;
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export interface ServerSummary {
  name: string;
  label: string;
  reqPerSec: Spread;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** Median over rounds of the server's CPU time per request; null without procfs. */
  serverCpuUsPerRequest: number | null;
  /** Median over rounds of its system (kernel) part; null or absent where not measured. */
  serverSystemCpuUsPerRequest?: number | null;
  /** Per round, this server's req/s over the baseline's in the same round. */
  ratio: Spread;
  /** The same against the comparison's secondary baseline, when it has one. */
  secondaryRatio?: Spread;
  /** With `allowStatuses`: the median share of answers with one of them. */
  allowedShare?: number;
}

export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  totalMemoryGiB: number;
  node: string;
  platform: string;
  loadAverage: readonly number[];
}

export interface RunSettings {
  quick: boolean;
  rounds: number;
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  pipelining: number;
}

/** `bench/results/<name>.json`. */
export interface ComparisonResult {
  /** Absent in request/response results; fan-out results say `'fanout'`. */
  kind?: 'request';
  name: string;
  title: string;
  description: string;
  baseline: string;
  secondaryBaseline?: string;
  /** What one request makes, when not a plain request. */
  unit?: Unit;
  /** The comparison's `allowStatuses`, when it has them. */
  allowStatuses?: readonly number[];
  date: string;
  command: string;
  serverCommands: Record<string, string>;
  loadCommand: string;
  machine: MachineInfo;
  settings: RunSettings;
  request: RequestSpec;
  /** Per server, the request headers it alone is sent (`$NAME` as written, not expanded). */
  serverRequestHeaders?: Record<string, Readonly<Record<string, string>>>;
  notes: readonly string[];
  servers: ServerSummary[];
  measurements: Measurement[];
  /** The comparison's `profile` servers, profiled after the rounds. */
  profiles?: ProfileSummary[];
  /** What its `inProcess` script measured, after the profiles. */
  inProcess?: InProcessResult;
}

/** A request path measured in-process (bench/reference/in-process.ts `report`). */
export interface InProcessResult {
  requests: number;
  rounds: number;
  /** The harness with a bare handler writing the same body: its own cost. */
  bareUsPerRequest: number;
  /** The harness with the chain (median of the rounds). */
  chainUsPerRequest: number;
  bareBytesPerRequest: number;
  chainBytesPerRequest: number;
  /** The chain's largest allocation sites, bytes per request, largest first. */
  allocations: { where: string; bytes: number }[];
}

/** Where one server's CPU went under load, from a CPU profile of it (bench/lib/profile.ts). */
export interface ProfileSummary {
  server: string;
  /** Requests answered while profiled. */
  requests: number;
  /** The main thread's samples but idle time and module loading, µs per request. */
  busyUsPerRequest: number;
  /** Those samples by where they fell, largest first. */
  categories: { name: string; usPerRequest: number }[];
  /** portico's and the app's functions with the largest self time, largest first. */
  functions: { name: string; where: string; usPerRequest: number }[];
}
