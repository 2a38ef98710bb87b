import { arch, cpus, loadavg, platform, release, totalmem } from 'node:os';
import type { MachineInfo } from './types.js';

export function machineInfo(): MachineInfo {
  const list = cpus();
  return {
    cpus: list.length,
    cpuModel: list[0]?.model.trim() ?? 'unknown',
    totalMemoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${platform()} ${release()} ${arch()}`,
    loadAverage: loadavg().map((n) => Math.round(n * 100) / 100),
  };
}
