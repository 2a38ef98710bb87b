/**
 * Shapes of the cold-import comparisons (`import`): no server and no load, each measurement a
 * fresh `node` process that times one `await import(specifier)` and exits. The other kinds
 * keep their own shapes.
 */
import type { MachineInfo, Spread } from '../lib/types.js';

/** One row: what a fresh process imports. */
export interface ImportRow {
  /** Short id, used in results. */
  name: string;
  /** What the table calls it. */
  label: string;
  /**
   * The specifier given to `import()` in the child, resolved from the child script (so
   * `../../dist/index.js` is the build); `null` for a process that imports nothing.
   */
  specifier: string | null;
  /** Drawn grey in the chart: a reference row, not portico. */
  reference: boolean;
}

/** Rows each imported by fresh processes, timed inside the process. */
export interface ImportComparison {
  kind: 'import';
  name: string;
  title: string;
  /** One paragraph for BENCHMARKS.md. */
  description: string;
  /** The `name` of the row with nothing (or the least) to import: the floor. */
  baseline: string;
  rows: readonly ImportRow[];
  /** The child script, relative to the repository root: `node <entry> [specifier]`. */
  entry: string;
  /** Measured processes per row. */
  processes: { full: number; quick: number };
  notes?: readonly string[];
}

export interface ImportSettings {
  quick: boolean;
  /** Measured processes per row (after one discarded per row). */
  processes: number;
  /** Discarded processes per row, before any is measured. */
  warmup: number;
}

/** What the child prints (one JSON line). */
export interface ImportReport {
  /** `performance.now()` after the import's promise settled, minus before `import()`. */
  ms: number;
  /** The imported namespace's export count (0 for no import). */
  exports: number;
}

/** One measured process. */
export interface ImportMeasurement {
  row: string;
  /** The round (0-based): every row runs one process per round. */
  round: number;
  /** The import's time inside the process. */
  importMs: number;
  /** The process's whole life as the orchestrator sees it: spawn to exit. */
  processMs: number;
}

export interface ImportRowSummary {
  name: string;
  label: string;
  specifier: string | null;
  /** A reference row, not portico. */
  reference: boolean;
  importMs: Spread;
  /** Median over processes. */
  processMs: number;
}

/** `bench/results/<name>.json` of a cold-import comparison. */
export interface ImportResult {
  kind: 'import';
  name: string;
  title: string;
  description: string;
  baseline: string;
  date: string;
  command: string;
  /** One child command line per row. */
  childCommands: Record<string, string>;
  machine: MachineInfo;
  settings: ImportSettings;
  notes: readonly string[];
  servers: ImportRowSummary[];
  measurements: ImportMeasurement[];
}
