/** The "where the CPU goes" table of a comparison's CPU profiles (bench/lib/profile.ts). */
import type { ProfileSummary } from './types.js';

const int = (n: number) => Math.round(n).toLocaleString('en-US');

/** Who a profile table is of: servers answering requests, or senders making deliveries. */
const PROFILED = {
  request: {
    who: 'servers',
    how: 'warmed up and loaded round-robin as in the rounds',
    during: 'those loads',
    unit: 'requests they answered',
  },
  delivery: {
    who: 'senders',
    how: 'checked, warmed up and run round-robin as in the rounds',
    during: 'those runs',
    unit: 'deliveries they made',
  },
} as const;

/** The "where the CPU goes" table of a result's CPU profiles, per request or per delivery. */
export function renderProfiles(
  result: {
    profiles?: readonly ProfileSummary[];
    servers: readonly { name: string; label: string }[];
  },
  per: keyof typeof PROFILED = 'request',
): string {
  const profiles = result.profiles ?? [];
  if (profiles.length === 0) return '';
  const labelOf = (name: string) => result.servers.find((s) => s.name === name)?.label ?? name;
  const us = (n: number | undefined) => (n === undefined ? '–' : n.toFixed(1));
  const names = [...new Set(profiles.flatMap((p) => p.categories.map((c) => c.name)))];
  const lines = [
    `| µs per ${per}, from a CPU profile | ${profiles.map((p) => labelOf(p.server)).join(' | ')} |`,
    `| --- |${' ---: |'.repeat(profiles.length)}`,
    ...names.map(
      (name) =>
        `| ${name} | ${profiles.map((p) => us(p.categories.find((c) => c.name === name)?.usPerRequest)).join(' | ')} |`,
    ),
    `| **all of it** (idle time and module loading left out) | ${profiles.map((p) => `**${us(p.busyUsPerRequest)}**`).join(' | ')} |`,
  ];
  const own = profiles
    .filter((p) => p.functions.length > 0)
    .map(
      (p) =>
        `- ${labelOf(p.server)}, ${int(p.requests)} ${per === 'request' ? 'requests' : 'deliveries'}: ` +
        p.functions.map((f) => `\`${f.name}\` (${f.where}) ${us(f.usPerRequest)}`).join(', '),
    );
  const { who, how, during, unit } = PROFILED[per];
  return [
    '',
    '',
    `Where the CPU goes: the ${who} below were started once more after the rounds, under ` +
      `\`node --cpu-prof\`, ${how}; their main threads’ samples taken during ${during}, by ` +
      `where they fell, over the ${unit} (the profiler’s own cost included, so these compare ` +
      'with each other, not with the table above).',
    '',
    ...lines,
    ...(own.length === 0
      ? []
      : ['', `Their own functions with the largest self time (µs per ${per}):`, '', ...own]),
  ].join('\n');
}
