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

/** CPU seconds a process has used so far: in user mode and in the kernel on its behalf. */
export interface CpuTimes {
  user: number;
  system: number;
}

/**
 * CPU seconds (user and system, every thread) that process `pid` has used so far, from
 * `/proc/<pid>/stat`; `undefined` where there is no procfs. Sampled around a measurement,
 * they give the server's CPU time per request, which machine noise disturbs far less than
 * requests per second, and the kernel's share of it (on loopback, sending a response also
 * runs the receiver's side of TCP and wakes the load generator, charged to the sender).
 */
export function processCpuTimes(pid: number | undefined): CpuTimes | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, so utime
    // (field 14) and stime (field 15) are at 11 and 12.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const user = Number(fields[11]);
    const system = Number(fields[12]);
    if (!Number.isFinite(user) || !Number.isFinite(system)) return undefined;
    ticksPerSecond ??= clockTicks();
    return { user: user / ticksPerSecond, system: system / ticksPerSecond };
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) that process `pid` has used so far: see {@link processCpuTimes}. */
export function processCpuSeconds(pid: number | undefined): number | undefined {
  const times = processCpuTimes(pid);
  return times === undefined ? undefined : times.user + times.system;
}
