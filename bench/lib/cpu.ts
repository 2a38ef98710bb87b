import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/**
 * CPU seconds (user + system, every thread) that process `pid` has used so far, from
 * `/proc/<pid>/stat`; `undefined` where there is no procfs. Sampled around a measurement,
 * it gives the server's CPU time per request, which machine noise disturbs far less than
 * requests per second.
 */
export function processCpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, so utime
    // (field 14) and stime (field 15) are at 11 and 12.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    if (!Number.isFinite(ticks)) return undefined;
    ticksPerSecond ??= clockTicks();
    return ticks / ticksPerSecond;
  } catch {
    return undefined;
  }
}
