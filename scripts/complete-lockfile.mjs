#!/usr/bin/env node
// Completes package-lock.json with the platform-specific optional packages (other OSes and
// CPUs) that npm leaves out when its registry cannot serve them: without them `npm ci`
// rejects the lockfile (npm/cli#9846) and, on a machine that can reach them, it would be
// out of sync anyway. Each added entry is optional and carries the os/cpu/libc read from
// its name, so npm skips it everywhere but on its own platform. Run after `npm install`
// (`npm run lock`).
import { readFileSync, writeFileSync } from 'node:fs';

const OS = [
  'android',
  'darwin',
  'freebsd',
  'linux',
  'netbsd',
  'openbsd',
  'openharmony',
  'sunos',
  'win32',
  'aix',
];
const CPU = [
  'arm64',
  'arm',
  'x64',
  'ia32',
  'loong64',
  'ppc64',
  'riscv64',
  's390x',
  'mips64el',
  'wasm32',
];

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages;
let added = 0;

for (const [path, entry] of Object.entries(packages)) {
  for (const [name, range] of Object.entries(entry.optionalDependencies ?? {})) {
    const base = path === '' ? '' : `${path}/`;
    const key = `${base}node_modules/${name}`;
    if (packages[key] || packages[`node_modules/${name}`]) continue;
    const tokens = name.split('/').pop().split('-');
    const os = tokens.find((t) => OS.includes(t));
    const cpu = tokens.find((t) => CPU.includes(t));
    if (!os || !cpu) continue; // not a platform binary: leave it to npm
    const version = /^\d+\.\d+\.\d+(?:-[\w.]+)?$/.test(range) ? range : undefined;
    if (!version) continue;
    const added_ = { version, optional: true, os: [os], cpu: [cpu] };
    if (entry.dev) added_.dev = true;
    if (os === 'linux' && tokens.includes('musl')) added_.libc = ['musl'];
    else if (os === 'linux' && (tokens.includes('gnu') || tokens.includes('gnueabihf')))
      added_.libc = ['glibc'];
    packages[`node_modules/${name}`] = added_;
    added++;
  }
}

lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: added ${added} platform entries`);
