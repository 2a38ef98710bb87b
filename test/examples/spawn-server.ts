import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Every variable the reference server reads: none leaks in from the test runner. */
const SERVER_SETTINGS = [
  'PORT',
  'HOST',
  'BASE_URL',
  'AUTH_URL',
  'TLS_CERT',
  'TLS_KEY',
  'TLS_CA',
  'NODE_ENV',
  'TRUST_PROXY',
  'REDIS_URL',
  'CORS_ORIGINS',
  'RATE_LIMIT',
  'RATE_LIMIT_WINDOW',
  'REGISTRATION_LIMIT',
  'DEMO_API_KEY',
  'SIGNING_KEY',
  'DEMO_FAPI_JWKS',
  'WEBHOOK_ALLOW_PRIVATE',
  'CLIENT_METADATA_ALLOW_PRIVATE',
  'WEBHOOK_RETRY_SCHEDULE',
  'WEBHOOK_TIMEOUT',
  'SSE_HEARTBEAT',
  'WS_HEARTBEAT',
  'LOG_LEVEL',
  'MAINTENANCE',
  'MAINTENANCE_RETRY_AFTER',
  'OVERLOAD_MAX_DELAY',
  'UPSTREAM_ISSUER',
  'UPSTREAM_CLIENT_ID',
  'UPSTREAM_CLIENT_SECRET',
  'UPSTREAM_NAME',
];

/** A reference server running in its own process, as `npm start` runs it. */
export interface RunningServer {
  url: string;
  child: ChildProcess;
  output: () => string;
  /** Sends `signal` and resolves with the exit code (or null) once the process is gone. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

/**
 * Starts the reference server with `env` added, resolving once it prints its ready line. By
 * default node runs `main.ts` itself; `viaNpm` runs `npm start` instead, as a user does (the
 * signals then go to npm, which must hand them on).
 */
export function startReferenceServer(
  env: Record<string, string> = {},
  timeoutMs = 15_000,
  viaNpm = false,
): Promise<RunningServer> {
  const inherited = { ...process.env };
  // vitest (through vite) puts BASE_URL, MODE, DEV, PROD and SSR into the environment
  for (const name of [...SERVER_SETTINGS, 'MODE', 'DEV', 'PROD', 'SSR']) delete inherited[name];
  const [command, args] = viaNpm
    ? ['npm', ['start', '--silent']]
    : [process.execPath, ['--import', 'tsx', 'examples/reference-server/main.ts']];
  const child = spawn(command, args, {
    cwd: root,
    env: { ...inherited, PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`reference server did not start in time:\n${out}`));
    }, timeoutMs);
    const onData = () => {
      const match = /listening on (\S+)/.exec(out);
      if (!match) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve({
        url: match[1]!,
        child,
        output: () => out,
        stop: async (signal = 'SIGTERM') => {
          if (child.exitCode === null) child.kill(signal);
          return exited;
        },
      });
    };
    child.stdout!.on('data', onData);
    exited.then((code) => {
      clearTimeout(timer);
      reject(
        Object.assign(new Error(`reference server exited with ${code}:\n${out}`), { code, out }),
      );
    });
  });
}
