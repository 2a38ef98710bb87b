import type { Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { log } from '../../core/logger.js';
import type { ServiceApp } from './app.js';
import type { ServeSettings } from './options.js';
import type { Traffic } from './traffic.js';

/** What changes as a service starts and stops. */
export interface Phase {
  /** The app in service, once built (never one built after the close began). */
  app: ServiceApp | undefined;
  closing: boolean;
  closed: boolean;
}

/** One service's parts, for its close. */
export interface Lifecycle {
  phase: Phase;
  server: HttpServer | HttpsServer;
  traffic: Traffic;
  /** The app, once built (rejects when it cannot listen or building fails). */
  built: Promise<ServiceApp>;
  /** The close, once begun. */
  closure?: Promise<void>;
  /** Removes the signal listeners. */
  unlisten(): void;
}

const COMPONENT = 'http';

/** Runs one of the app's close steps; a failure is logged and the close goes on. */
async function step(settings: ServeSettings, name: string, run: () => unknown): Promise<void> {
  try {
    await run();
  } catch (err) {
    log(
      settings.logger,
      'error',
      { component: COMPONENT, event: 'serve.close-failed', step: name, err },
      `the app's ${name}() failed while closing`,
    );
  }
}

async function drain(life: Lifecycle, settings: ServeSettings, serverClosed: Promise<void>) {
  // an app still being built is waited for, then closed: it never serves
  const app = await life.built.catch(() => undefined);
  await step(settings, 'beforeDrain', () => app?.beforeDrain?.());
  await life.traffic.drained();
  await step(settings, 'close', () => app?.close?.());
  // what became idle while draining (a keep-alive connection, an ended stream's) goes now
  life.server.closeIdleConnections();
  await serverClosed;
}

function force(life: Lifecycle, settings: ServeSettings): void {
  log(
    settings.logger,
    'warn',
    { component: COMPONENT, event: 'serve.close-forced', gracePeriod: settings.gracePeriod },
    'the close took longer than its grace period: every connection left is closed',
  );
  life.server.closeAllConnections();
  life.traffic.destroyHeld();
}

async function closeListening(life: Lifecycle, settings: ServeSettings): Promise<void> {
  const { server, traffic } = life;
  const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  traffic.closeAfterAnswers();
  let timer: NodeJS.Timeout | undefined;
  const forced = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      force(life, settings);
      resolve();
    }, settings.gracePeriod);
    timer.unref();
  });
  await Promise.race([drain(life, settings, serverClosed), forced]);
  clearTimeout(timer);
}

/** The graceful close of a service: begun once, every call gets its promise. */
export function closeService(
  life: Lifecycle,
  settings: ServeSettings,
  listening: Promise<unknown>,
): Promise<void> {
  if (life.closure === undefined) {
    life.phase.closing = true;
    life.closure = listening
      .then(
        () => closeListening(life, settings),
        () => {}, // never listened: nothing to close
      )
      .then(() => {
        life.phase.closed = true;
        life.unlisten();
      });
  }
  return life.closure;
}

/** Starts `close` on each of `settings.signals`; returns what removes the listeners. */
export function listenForSignals(
  life: Lifecycle,
  settings: ServeSettings,
  close: () => Promise<void>,
): () => void {
  const { signals, logger } = settings;
  const onSignal = (signal: NodeJS.Signals) => {
    // a second signal (npm and the terminal both send SIGINT) changes nothing
    if (life.closure !== undefined) return;
    log(logger, 'info', { component: COMPONENT, event: 'serve.signal', signal }, 'closing');
    try {
      settings.onSignal?.(signal);
    } catch (err) {
      log(logger, 'error', { component: COMPONENT, event: 'serve.signal', err }, 'onSignal threw');
    }
    close().then(() => {
      if (settings.exitOnSignal) process.exit(process.exitCode ?? 0);
    });
  };
  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
}
