/**
 * Shapes of the in-process comparisons (`jwt`): no server and no network, each row (a
 * variant, e.g. a library, under a group, e.g. an algorithm) runs in a process of its own,
 * started once and told over IPC to run each workload for a bounded time, one operation at
 * a time. The request/response, fan-out and sender comparisons keep their own shapes.
 */
import type { MachineInfo, Spread, Unit } from '../lib/types.js';

/** One implementation under test (a library, or a library with an option). */
export interface OpsVariant {
  /** Short id, used in results and command lines. */
  name: string;
  /** What the tables call it. */
  label: string;
}

/** One workload every row runs: which inputs it cycles through. */
export interface OpsWorkload {
  name: string;
  label: string;
}

/** Rows `groups × variants`, each measured on every workload against a baseline variant. */
export interface OpsComparison {
  kind: 'ops';
  name: string;
  title: string;
  /** One paragraph for BENCHMARKS.md. */
  description: string;
  /** The `name` of the variant the ratios are taken against (within each group and workload). */
  baseline: string;
  /** A second variant to give ratios against, in a column of its own. */
  secondaryBaseline?: string;
  /** E.g. the algorithms: every variant runs once per group. */
  groups: readonly string[];
  variants: readonly OpsVariant[];
  workloads: readonly OpsWorkload[];
  /** The child script, relative to the repository root: `<entry> <group> <variant>`. */
  entry: string;
  /** Milliseconds per workload per round, and of warm-up per workload. */
  durationMs: { full: number; quick: number };
  warmupMs: { full: number; quick: number };
  /** What one operation is, for the tables and charts. */
  unit: Unit;
  /**
   * Runs in the orchestrator once, before the children start: per group, the inputs (keys,
   * tokens) every variant of that group is sent over IPC, so all of them work on the same.
   */
  setup: () => Promise<Readonly<Record<string, unknown>>>;
  /** What the inputs are (no secret in it), for the results. */
  inputs: string;
  notes?: readonly string[];
}

export interface OpsSettings {
  quick: boolean;
  rounds: number;
  /** Milliseconds per workload per round. */
  durationMs: number;
  /** Milliseconds of discarded warm-up per workload (at least one pass over its inputs). */
  warmupMs: number;
  /** Operations in flight in a child: 1, each awaited before the next. */
  inFlight: 1;
}

/** The orchestrator's commands to a child (over IPC). */
export type OpsCommand =
  | { type: 'setup'; inputs: unknown; warmupMs: number }
  | { type: 'run'; workload: string; round: number; durationMs: number }
  | { type: 'exit' };

/** One timed run as the child saw it. */
export interface OpsRunReport {
  type: 'done';
  workload: string;
  round: number;
  ops: number;
  seconds: number;
  /** The child's CPU time (user + system, `process.cpuUsage`) over the run, in µs. */
  cpuUs: number;
}

/** What a child tells the orchestrator. */
export type OpsReport =
  | { type: 'started' }
  /** Checked and warmed up: the checks passed, and the warm-up rates per workload. */
  | { type: 'ready'; checks: string[]; warmup: Record<string, number> }
  | OpsRunReport
  | { type: 'failed'; message: string };

/** One measured run of one row on one workload. */
export interface OpsMeasurement {
  /** `<group>/<variant>`. */
  row: string;
  workload: string;
  round: number;
  ops: number;
  seconds: number;
  opsPerSec: number;
  cpuUsPerOp: number;
}

export interface OpsWorkloadSummary {
  opsPerSec: Spread;
  /** Median over rounds. */
  cpuUsPerOp: number;
  /** Per round, this row's ops/s over the baseline variant's (same group, workload, round). */
  ratio: Spread;
  secondaryRatio?: Spread;
}

export interface OpsRowSummary {
  /** `<group>/<variant>`. */
  name: string;
  group: string;
  variant: string;
  label: string;
  workloads: Record<string, OpsWorkloadSummary>;
}

/** `bench/results/<name>.json` of an in-process comparison. */
export interface OpsResult {
  kind: 'ops';
  name: string;
  title: string;
  description: string;
  baseline: string;
  secondaryBaseline?: string;
  unit: Unit;
  workloads: readonly OpsWorkload[];
  inputs: string;
  date: string;
  command: string;
  /** One child command line per variant (the group is its first argument). */
  childCommands: Record<string, string>;
  machine: MachineInfo;
  settings: OpsSettings;
  notes: readonly string[];
  servers: OpsRowSummary[];
  measurements: OpsMeasurement[];
}
