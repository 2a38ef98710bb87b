// A Next.js app (App Router, Node runtime) made from `files`, with the packed package
// installed, built by `next build` and served by `next start` on 127.0.0.1: for the suites
// that run through Next's own request handling.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { installConsumer, pack, run, write } from './packed.js';
import { freePort, spawnReady } from './process.js';

/**
 * Builds and starts the Next.js app of `files` (paths relative to the project, such as
 * `app/api/me/route.js`); its `next.config.mjs` keeps portico out of the bundle and widens
 * Turbopack's root to the linked node_modules. Resolves once it is ready.
 */
export async function startNextApp(
  files: Record<string, string>,
): Promise<{ port: number; close(): void }> {
  const packed = await pack('portico-next-app-');
  const app = join(packed.work, 'app');
  await installConsumer(packed.tarball, app, [
    'next',
    'react',
    'react-dom',
    '@next/swc-linux-x64-gnu',
  ]);
  write(
    join(app, 'package.json'),
    JSON.stringify({ name: 'next-app', private: true, type: 'module' }),
  );
  write(
    join(app, 'next.config.mjs'),
    "export default { serverExternalPackages: ['portico'], poweredByHeader: false, turbopack: { root: '/' } };\n",
  );
  write(
    join(app, 'app/layout.js'),
    'export default function Layout({ children }) { return children; }\n',
  );
  for (const [file, text] of Object.entries(files)) write(join(app, file), text);
  const nextBin = join(app, 'node_modules', 'next', 'dist', 'bin', 'next');
  await run(process.execPath, [nextBin, 'build'], app, 240_000);
  const port = await freePort();
  const child = await spawnReady(
    [nextBin, 'start', '-p', String(port), '-H', '127.0.0.1'],
    { cwd: app, env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' } },
    'Ready',
  );
  return {
    port,
    close() {
      child.kill('SIGTERM');
      rmSync(packed.work, { recursive: true, force: true });
    },
  };
}
