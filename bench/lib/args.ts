import { parseArgs } from 'node:util';

export interface CliOptions {
  names: string[];
  quick: boolean;
  rounds: number;
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  report: boolean;
  help: boolean;
}

export const USAGE = `usage: npm run bench -- [names…] [--quick] [--rounds N] [--duration S]
                            [--warmup S] [--connections N]

  names          comparisons to run (default: all)
  --quick        2 rounds × 2 s after a 1 s warm-up (default: 5 rounds × 5 s after 2 s)
  --rounds N     measured rounds per server, interleaved round-robin (1–20)
  --duration S   seconds per measurement (1–60)
  --warmup S     seconds of discarded load per server before measuring (0–60)
  --connections N  concurrent connections (1–1000, default 50)
  --report       measure nothing: rebuild BENCHMARKS.md and the charts from bench/results`;

function integer(
  name: string,
  text: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(
      `--${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(text)}`,
    );
  }
  return value;
}

/** Parses `[names…] [--quick] [--rounds N] [--duration S] [--warmup S] [--connections N]`. */
export function parseCli(argv: readonly string[]): CliOptions {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      quick: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      report: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const quick = values.quick === true;
  return {
    names: positionals,
    quick,
    rounds: integer('rounds', values.rounds, quick ? 2 : 5, 1, 20),
    durationSeconds: integer('duration', values.duration, quick ? 2 : 5, 1, 60),
    warmupSeconds: integer('warmup', values.warmup, quick ? 1 : 2, 0, 60),
    connections: integer('connections', values.connections, 50, 1, 1000),
    report: values.report === true,
    help: values.help === true,
  };
}
