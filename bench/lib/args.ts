import { parseArgs } from 'node:util';

export interface CliOptions {
  names: string[];
  quick: boolean;
  rounds: number;
  /** Whether `--rounds` was given (the import comparison has its own default). */
  roundsGiven: boolean;
  /** `--rounds` for the fan-out comparisons, whose rounds are longer. */
  fanoutRounds: number;
  durationSeconds: number;
  /** Whether `--duration` was given (in-process comparisons have their own default). */
  durationGiven: boolean;
  warmupSeconds: number;
  connections: number;
  /** Fan-out comparisons: connections per server (unset: the comparison's default), and broadcasts per round. */
  clients: number | undefined;
  messages: number;
  /** Sender comparisons (webhook): deliveries per round. */
  deliveries: number;
  report: boolean;
  help: boolean;
}

export const USAGE = `usage: npm run bench -- [names…] [--quick] [--rounds N] [--duration S]
                            [--warmup S] [--connections N] [--clients N] [--messages K]
                            [--deliveries M]

  names          comparisons to run (default: all)
  --quick        a smoke run: 1 round × 1 s, no warm-up (default: 4 rounds × 3 s
                 after 2 s); it shows that every comparison runs, its numbers mean little
  --rounds N     measured rounds per server, interleaved round-robin (1–20; fan-out
                 comparisons default to 3, quick 1; import: processes per row, default
                 15, quick 5)
  --duration S   seconds per measurement (1–60; in-process comparisons, jwt: per workload,
                 default 0.45 s, quick 0.2 s)
  --warmup S     seconds of discarded load per server before measuring (0–60)
  --connections N  concurrent connections (1–1000, default 50)
  --clients N    fan-out (ws, sse, redis-fanout): connections per server (1–15000; default
                 10000, quick 1000; redis-fanout 2000, quick 500)
  --messages K   fan-out (ws, sse): broadcasts per round (1–1000, default 10)
  --deliveries M senders (webhook): deliveries per round (1–100000; default 5000, quick 500)
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
      clients: { type: 'string' },
      messages: { type: 'string' },
      deliveries: { type: 'string' },
      report: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const quick = values.quick === true;
  return {
    names: positionals,
    quick,
    rounds: integer('rounds', values.rounds, quick ? 1 : 4, 1, 20),
    roundsGiven: values.rounds !== undefined,
    fanoutRounds: integer('rounds', values.rounds, quick ? 1 : 3, 1, 20),
    durationSeconds: integer('duration', values.duration, quick ? 1 : 3, 1, 60),
    durationGiven: values.duration !== undefined,
    warmupSeconds: integer('warmup', values.warmup, quick ? 0 : 2, 0, 60),
    connections: integer('connections', values.connections, 50, 1, 1000),
    clients:
      values.clients === undefined ? undefined : integer('clients', values.clients, 0, 1, 15_000),
    messages: integer('messages', values.messages, 10, 1, 1000),
    deliveries: integer('deliveries', values.deliveries, quick ? 500 : 5000, 1, 100_000),
    report: values.report === true,
    help: values.help === true,
  };
}
