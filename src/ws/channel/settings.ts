// The options of createChannelProtocol(), checked once, with their defaults.

import type { Revocations } from '../../auth/revocations.js';
import { revocationsOption } from '../../auth/revocations.js';
import { type Logger, log, loggerOption } from '../../core/logger.js';
import {
  assertKnownOptions,
  countOption,
  durationOption,
  functionOption,
  invalidOption,
} from '../../internal/options.js';
import { MAX_TIMER_DELAY } from '../../realtime/connection-options.js';
import type { Hub } from '../../realtime/hub.js';
import { chatMessage } from './input.js';
import type {
  ChannelAuthorizer,
  ChannelMessageHandler,
  ChannelMessageReader,
  ChannelProtocolOptions,
  ChannelRateLimit,
} from './options.js';
import type { CheckedRateLimit } from './rate-limit.js';

/** The built-in message types, which `extend` cannot replace. */
export const BUILT_IN = new Set(['join', 'ping', 'subscribe', 'unsubscribe', 'message']);

/** {@link ChannelProtocolOptions} checked, with their defaults. */
export interface ChannelSettings {
  hub: Hub | undefined;
  heartbeat: number;
  extend: Readonly<Record<string, ChannelMessageHandler>>;
  authorize: ChannelAuthorizer | undefined;
  closeTimeout: number;
  /** Logs an unexpected error (the connection then closes with 1011). */
  reportError: (error: unknown) => void;
  rateLimit: CheckedRateLimit | false;
  maxBufferedBytes: number;
  message: ChannelMessageReader;
  relayChannel: string | false;
  revocations: Revocations | undefined;
}

const OWNER = 'createChannelProtocol()';
const KNOWN_OPTIONS = [
  'hub',
  'heartbeat',
  'extend',
  'authorize',
  'closeTimeout',
  'logger',
  'rateLimit',
  'maxBufferedBytes',
  'message',
  'relayChannel',
  'revocations',
] as const satisfies readonly (keyof ChannelProtocolOptions)[];

function errorReporter(logger: Logger): (error: unknown) => void {
  return (error) =>
    log(
      logger,
      'error',
      { component: 'ws', event: 'channel.failed', err: error },
      'a WebSocket channel failed unexpectedly (closed with 1011)',
    );
}

/** `rateLimit`: `false`, or a burst of `messages` refilled per `interval` milliseconds. */
function rateLimitOption(value: ChannelRateLimit | false | undefined): CheckedRateLimit | false {
  if (value === false) return false;
  if (value === undefined) return { messages: 100, interval: 10_000 };
  if (typeof value !== 'object' || value === null) {
    throw invalidOption(`${OWNER}: \`rateLimit\` must be false or { messages, interval }`);
  }
  return {
    // both required: `null` (never a number) fails the check when one is missing
    messages: countOption(OWNER, 'rateLimit.messages', value.messages ?? null, 1),
    interval: durationOption(OWNER, 'rateLimit.interval', value.interval ?? null, 1, {
      min: 1,
      floor: 100,
    }),
  };
}

/** `maxBufferedBytes`: a number of bytes ≥ 1, or `Infinity` for no bound. */
function maxBufferedBytesOption(value: number | undefined): number {
  if (value === Number.POSITIVE_INFINITY) return value;
  return countOption(OWNER, 'maxBufferedBytes', value, 1024 * 1024);
}

function extendOption(
  extend: Readonly<Record<string, ChannelMessageHandler>> | undefined = {},
): Readonly<Record<string, ChannelMessageHandler>> {
  for (const [type, handler] of Object.entries(extend)) {
    if (BUILT_IN.has(type)) throw invalidOption(`${OWNER}: "${type}" is a built-in message type`);
    functionOption(OWNER, `extend["${type}"]`, handler);
  }
  return extend;
}

function relayChannelOption(value: string | false | undefined): string | false {
  const relayChannel = value ?? 'portico:relay';
  if (relayChannel !== false && (typeof relayChannel !== 'string' || relayChannel === '')) {
    throw invalidOption(`${OWNER}: \`relayChannel\` must be a channel name or false`);
  }
  return relayChannel;
}

/** Checks the options of {@link createChannelProtocol} and fills in the defaults. */
export function channelSettings(options: ChannelProtocolOptions): ChannelSettings {
  assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
  const timer = { max: MAX_TIMER_DELAY };
  return {
    hub: options.hub,
    heartbeat: durationOption(OWNER, 'heartbeat', options.heartbeat, 30_000, timer),
    extend: extendOption(options.extend),
    authorize: functionOption(OWNER, 'authorize', options.authorize),
    closeTimeout: durationOption(OWNER, 'closeTimeout', options.closeTimeout, 5_000, timer),
    reportError: errorReporter(loggerOption(OWNER, options.logger)),
    rateLimit: rateLimitOption(options.rateLimit),
    maxBufferedBytes: maxBufferedBytesOption(options.maxBufferedBytes),
    message: functionOption(OWNER, 'message', options.message) ?? chatMessage,
    relayChannel: relayChannelOption(options.relayChannel),
    revocations: revocationsOption(OWNER, options.revocations),
  };
}
