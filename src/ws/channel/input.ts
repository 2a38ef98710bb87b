import type { RawData } from 'ws';
import { CONTROL } from '../../internal/grammar.js';
import { CloseCode, WebSocketCloseError } from '../close-codes.js';
import type { ChannelMessageReader } from './options.js';

/** A 1008 (policy violation) close for malformed client input. */
export const policy = (reason: string) =>
  new WebSocketCloseError(CloseCode.POLICY_VIOLATION, reason);

/** A string field of a client message, when present: `min`–`max` characters, else 1008. */
export function optionalString(
  message: Readonly<Record<string, unknown>>,
  field: string,
  min: number,
  max: number,
): string | undefined {
  const value = message[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length < min || value.length > max) {
    throw policy(`Invalid "${field}": a string of ${min}–${max} characters.`);
  }
  return value;
}

/** A required string field of a client message, else 1008. */
export function requiredString(
  message: Readonly<Record<string, unknown>>,
  field: string,
  min: number,
  max: number,
): string {
  const value = optionalString(message, field, min, max);
  if (value === undefined) throw policy(`Missing "${field}".`);
  return value;
}

/** A channel name field: 1–100 characters without control characters, else 1008. */
export function channelName(message: Record<string, unknown>, required: true): string;
export function channelName(message: Record<string, unknown>, required: false): string | undefined;
export function channelName(
  message: Record<string, unknown>,
  required: boolean,
): string | undefined {
  const name = required
    ? requiredString(message, 'channel', 1, 100)
    : optionalString(message, 'channel', 1, 100);
  if (name !== undefined && CONTROL.test(name)) {
    throw policy('Invalid "channel": control characters are not allowed.');
  }
  return name;
}

/** Parses a text frame into a JSON object, else 1008. */
export function parseMessage(data: RawData): Record<string, unknown> {
  const text = Array.isArray(data)
    ? Buffer.concat(data).toString('utf8')
    : Buffer.from(data as ArrayBuffer).toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw policy('Messages must be JSON.');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw policy('Messages must be JSON objects.');
  }
  return value as Record<string, unknown>;
}

/**
 * The fields of a `message` in the reference chat protocol (the default
 * `ChannelProtocolOptions.message`): a `text` of 1–1000 characters and an optional `user` of
 * 1–100 characters, the name of the connection's last `join` when absent.
 */
export const chatMessage: ChannelMessageReader = (message, sender) => {
  const text = requiredString(message, 'text', 1, 1000);
  const user = optionalString(message, 'user', 1, 100) ?? sender.user;
  return user === undefined ? { text } : { text, user };
};
