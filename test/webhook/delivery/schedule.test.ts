import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY_SCHEDULE,
  parseRetryAfter,
  parseRetrySchedule,
  retryDelay,
} from '../../../src/webhook/delivery/schedule.js';
import { createWebhookSender } from '../../../src/webhook/sender.js';

describe('the retry schedule, in milliseconds', () => {
  it('is the Standard Webhooks schedule by default: 5 s … 24 h, ten attempts', () => {
    expect(DEFAULT_RETRY_SCHEDULE).toHaveLength(9);
    expect(DEFAULT_RETRY_SCHEDULE[0]).toBe(5_000);
    expect(DEFAULT_RETRY_SCHEDULE.at(-1)).toBe(86_400_000);
  });

  it('waits the scheduled milliseconds, spread by the jitter, never less than Retry-After', () => {
    expect(retryDelay(1, DEFAULT_RETRY_SCHEDULE, { jitter: 0 })).toBe(5_000);
    expect(retryDelay(2, [100, 250], { jitter: 0 })).toBe(250);
    expect(retryDelay(1, [1_000], { jitter: 0.2, random: () => 1 })).toBe(1_200);
    expect(retryDelay(1, [1_000], { jitter: 0.2, random: () => 0 })).toBe(800);
    expect(retryDelay(1, [10], { jitter: 0, retryAfterMs: 1_000 })).toBe(1_000);
    expect(retryDelay(10, DEFAULT_RETRY_SCHEDULE)).toBeUndefined();
  });

  it('reads Retry-After (seconds on the wire) as milliseconds, capped at a day', () => {
    expect(parseRetryAfter('120', 0)).toBe(120_000);
    expect(parseRetryAfter('9999999', 0)).toBe(86_400_000);
    expect(parseRetryAfter('soon', 0)).toBeUndefined();
  });

  it('parses a schedule of whole milliseconds, up to a week each', () => {
    expect(parseRetrySchedule('1000, 1000,1000')).toEqual([1_000, 1_000, 1_000]);
    expect(parseRetrySchedule('0,604800000')).toEqual([0, 604_800_000]);
    for (const bad of ['', '0.5', '1,,2', '-1', '604800001', '1e3', 'a']) {
      expect(() => parseRetrySchedule(bad), bad).toThrow(TypeError);
    }
  });

  it('refuses a sender schedule that is not whole milliseconds, 0 or more', () => {
    expect(() => createWebhookSender({ schedule: [0.5] })).toThrow(
      /createWebhookSender\(\): `schedule\[0\]` must be milliseconds/,
    );
    expect(() => createWebhookSender({ schedule: 5_000 as never })).toThrow(/schedule/);
    expect(() => createWebhookSender({ timeout: 0 })).toThrow(/timeout/);
    expect(() => createWebhookSender({ userAgent: 'a\r\nb' })).toThrow(/userAgent/);
  });
});
