// Beyond revocations.test.ts and credential-guard.test.ts: the exact option errors, what the bus
// publishes on portico:revocation, hostile messages on its transport, re-entrant and duplicate
// watchers, its memory staying flat, bindToCredential's contract with any Revocations bus and its
// timers; the guard's 429/503 problems and Retry-After, attempt()'s counting, isRefusal(), the
// guard check, and MemoryReplayStore's option errors. Clocks are injected (or faked).
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createCredentialGuard,
  guardOption,
  isCredentialGuard,
  isRefusal,
} from '../../src/auth/credential-guard.js';
import { MemoryReplayStore } from '../../src/auth/replay/store.js';
import {
  bindToCredential,
  createRevocations,
  type Revocations,
  type RevocationTransport,
  revocationsOption,
} from '../../src/auth/revocations.js';
import {
  badRequest,
  forbidden,
  HttpError,
  internalError,
  notFound,
  serviceUnavailable,
  tooManyRequests,
  unauthorized,
} from '../../src/core/errors/errors.js';
import { channels } from '../../src/diagnostics/index.js';
import { MemoryRateLimitStore } from '../../src/rate-limit/index.js';
import type { RateLimitStore } from '../../src/rate-limit/store.js';
import { createHub, MemoryBroker } from '../../src/realtime/index.js';
import { thrownTypeError } from '../helpers/errors.js';
import { fakeRequest } from '../helpers/fake-http.js';
import { captureLogger } from '../helpers/logger.js';

const CHANNEL = 'portico:revocations';
const T0 = Date.UTC(2030, 0, 1);

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

/** The HttpError `promise` rejects with (fails the test when it resolves or throws another). */
async function httpErrorOf(attempt: Promise<unknown> | (() => unknown)): Promise<HttpError> {
  // a function for what may throw synchronously (the guard's check over a synchronous store)
  const promise = typeof attempt === 'function' ? Promise.resolve().then(attempt) : attempt;
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert(error instanceof HttpError, 'expected a rejection with an HttpError');
  return error;
}

/** What portico:revocation publishes while `body` runs. */
async function published(body: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const onMessage = (message: unknown) => seen.push(message);
  subscribe(channels.revocation, onMessage);
  try {
    await body();
  } finally {
    unsubscribe(channels.revocation, onMessage);
  }
  return seen;
}

/** A bus over a hub on a memory broker whose listener failures land in `logger`. */
function busOverHub() {
  const logger = captureLogger();
  const hub = createHub({ broker: new MemoryBroker({ logger }) });
  const bus = createRevocations({ transport: hub });
  const sent: unknown[] = [];
  hub.subscribe(CHANNEL, (message) => {
    sent.push(message.data);
  });
  return { hub, bus, logger, sent };
}

describe('createRevocations(): options', () => {
  it('refuses a channel that is not a non-empty string, with its own message', () => {
    for (const channel of ['', 5, {}]) {
      const error = thrownTypeError(() => createRevocations({ channel: channel as string }));
      expect(error.message).toBe('createRevocations(): `channel` must be a non-empty string');
      expect(error.code).toBe('ERR_INVALID_OPTION');
    }
  });

  it('refuses a transport without both publish and subscribe, before subscribing to anything', () => {
    const subscribeOnly = vi.fn(() => () => {});
    const transports = [
      {},
      null,
      { publish: async () => {} },
      { subscribe: subscribeOnly },
      { publish: 'yes', subscribe: subscribeOnly },
    ];
    for (const transport of transports) {
      const error = thrownTypeError(() =>
        createRevocations({ transport: transport as unknown as RevocationTransport }),
      );
      expect(error.message).toBe(
        'createRevocations(): `transport` must be a hub (publish, subscribe)',
      );
      expect(error.code).toBe('ERR_INVALID_OPTION');
    }
    expect(subscribeOnly).not.toHaveBeenCalled();
  });
});

describe('createRevocations(): revoke()', () => {
  it('announces only non-empty string ids: to listeners, the transport and the channel', async () => {
    const { hub, bus, sent } = busOverHub();
    const seen = await published(() =>
      bus.revoke(['', 'grant:g1', 42 as unknown as string, 'token:t1']),
    );
    expect(sent).toEqual([{ ids: ['grant:g1', 'token:t1'] }]);
    // its own announcement comes back through the hub, as another process's would
    expect(seen).toEqual([
      { ids: ['grant:g1', 'token:t1'], origin: 'local' },
      { ids: ['grant:g1', 'token:t1'], origin: 'transport' },
    ]);
    await hub.close();
    const alone = createRevocations();
    const heard: string[] = [];
    const ended: string[] = [];
    alone.listen((id) => heard.push(id));
    alone.watch(['', 'grant:g1'], (id) => ended.push(id));
    await alone.revoke(['', 'grant:g1', 42 as unknown as string, 'token:t1']);
    expect(heard).toEqual(['grant:g1', 'token:t1']);
    expect(ended).toEqual(['grant:g1']);
  });

  it('announces nothing at all for no id, or only empty and non-string ones', async () => {
    const { hub, bus, sent } = busOverHub();
    const heard: string[] = [];
    bus.listen((id) => heard.push(id));
    const seen = await published(async () => {
      await bus.revoke([]);
      await bus.revoke(['', null as unknown as string]);
    });
    expect(heard).toEqual([]);
    expect(sent).toEqual([]);
    expect(seen).toEqual([]);
    await hub.close();
  });
});

describe('createRevocations(): what the transport brings', () => {
  it('ignores malformed messages without failing, and keeps hearing well-formed ones', async () => {
    const { hub, bus, logger } = busOverHub();
    const ended: string[] = [];
    bus.watch(['grant:g1'], (id) => ended.push(id));
    const seen = await published(async () => {
      await hub.publish(CHANNEL, 'revoked', null);
      await hub.publish(CHANNEL, 'revoked', 'grant:g1');
      await hub.publish(CHANNEL, 'revoked', { ids: 'grant:g1' });
      await hub.publish(CHANNEL, 'revoked', { ids: { 0: 'grant:g1', length: 1 } });
      // no string among them: nothing to end, nothing to announce
      await hub.publish(CHANNEL, 'revoked', { ids: [42, null] });
    });
    expect(ended).toEqual([]);
    expect(seen).toEqual([]);
    expect(logger.lines).toEqual([]);
    expect(bus.size).toBe(1);
    const heard: unknown[] = [];
    bus.listen((id) => heard.push(id));
    const later = await published(() =>
      hub.publish(CHANNEL, 'revoked', { ids: [7, 'grant:g1', { id: 'x' }] }).then(() => {}),
    );
    expect(ended).toEqual(['grant:g1']);
    expect(heard).toEqual(['grant:g1']);
    expect(later).toEqual([{ ids: ['grant:g1'], origin: 'transport' }]);
    expect(logger.lines).toEqual([]);
    await hub.close();
  });

  it('stops hearing the transport once closed; closing without a transport is a no-op', async () => {
    const { hub, bus } = busOverHub();
    const ended: string[] = [];
    bus.watch(['grant:g1'], (id) => ended.push(id));
    bus.close();
    await hub.publish(CHANNEL, 'revoked', { ids: ['grant:g1'] });
    expect(ended).toEqual([]);
    expect(bus.size).toBe(1);
    await hub.close();
    const alone = createRevocations();
    expect(() => alone.close()).not.toThrow();
  });
});

describe('createRevocations(): watchers', () => {
  it('does not call a watcher that an earlier one stopped while the same revocation ran', async () => {
    const bus = createRevocations();
    const ended: string[] = [];
    let stopSecond = () => {};
    bus.watch(['grant:g1'], () => {
      ended.push('first');
      stopSecond();
    });
    stopSecond = bus.watch(['grant:g1'], () => ended.push('second'));
    await bus.revoke(['grant:g1']);
    expect(ended).toEqual(['first']);
    expect(bus.size).toBe(0);
  });

  it('takes an id listed twice as one: stopped or revoked, without failing, once', async () => {
    const bus = createRevocations();
    const stop = bus.watch(['grant:g1', 'grant:g1'], () => {});
    expect(bus.size).toBe(1);
    expect(() => stop()).not.toThrow();
    expect(bus.size).toBe(0);
    const ended: string[] = [];
    bus.watch(['token:t1', 'token:t1'], (id) => ended.push(id));
    await bus.revoke(['token:t1']);
    await bus.revoke(['token:t1']);
    expect(ended).toEqual(['token:t1']);
    expect(bus.size).toBe(0);
  });

  it('holds no watcher for an empty list of ids', () => {
    const bus = createRevocations();
    const stop = bus.watch([], () => {});
    expect(bus.size).toBe(0);
    stop();
    expect(bus.size).toBe(0);
  });

  it('keeps nothing of the ids it stopped watching: memory stays flat over 20 000 streams', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const bus = createRevocations();
    gc();
    const before = getHeapStatistics().used_heap_size;
    for (let i = 0; i < 10_000; i++) {
      // a stream that ends first, and one ended by the revocation of one of its two ids
      bus.watch([`session:s${i}`, `grant:g${i}`], () => {})();
      bus.watch([`session:r${i}`, `grant:r${i}`], () => {});
      await bus.revoke([`session:r${i}`]);
    }
    gc();
    const grown = getHeapStatistics().used_heap_size - before;
    expect(bus.size).toBe(0);
    // a leak of one entry per id is megabytes here; what is left is the JIT's own
    expect(grown).toBeLessThan(1_000_000);
  });
});

describe('revocationsOption()', () => {
  it('passes a bus or undefined through', () => {
    const bus = createRevocations();
    expect(revocationsOption('stream()', undefined)).toBeUndefined();
    expect(revocationsOption('stream()', bus)).toBe(bus);
    const minimal = { watch: () => () => {}, revoke: async () => {} };
    expect(revocationsOption('stream()', minimal)).toBe(minimal);
  });

  it('refuses anything without both watch and revoke, naming the owner', () => {
    const values = [null, {}, 'bus', { watch: () => () => {} }, { revoke: async () => {} }];
    for (const value of values) {
      const error = thrownTypeError(() => revocationsOption('createEventStream()', value));
      expect(error.message).toBe(
        'createEventStream(): `revocations` must be a Revocations bus (createRevocations())',
      );
      expect(error.code).toBe('ERR_INVALID_OPTION');
    }
  });
});

/** A Revocations bus of one's own that records its watchers and calls them when told. */
function scriptedBus() {
  const watched: (readonly string[])[] = [];
  const callbacks: ((id: string) => void)[] = [];
  let unwatched = 0;
  const bus: Revocations = {
    revoke: async () => {},
    watch(ids, onRevoked) {
      watched.push([...ids]);
      callbacks.push(onRevoked);
      return () => {
        unwatched++;
      };
    },
    listen: () => () => true,
    size: 0,
    close: () => {},
  };
  const call = (id: string) => {
    for (const callback of callbacks) callback(id);
  };
  return { bus, watched, call, unwatched: () => unwatched };
}

/** Fake timers moved together with the injected clock. */
function fakeClock() {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  let clock = T0;
  return {
    now: () => clock,
    advance(ms: number) {
      clock += ms;
      vi.advanceTimersByTime(ms);
    },
  };
}

describe('bindToCredential()', () => {
  it('calls onEnd once, whatever a bus that calls back late or twice does', () => {
    const { now, advance } = fakeClock();
    const { bus, call } = scriptedBus();
    const ends: unknown[] = [];
    bindToCredential(
      { credentialIds: ['grant:g1', 'token:t1'], expiresAt: T0 + 1000 },
      { revocations: bus, now, onEnd: (reason, id) => ends.push([reason, id]) },
    );
    call('token:t1');
    call('grant:g1');
    call('token:t1');
    advance(5000);
    expect(ends).toEqual([['revoked', 'token:t1']]);

    const expired: unknown[] = [];
    const other = scriptedBus();
    bindToCredential(
      { credentialIds: ['grant:g2'], expiresAt: T0 + 6000 },
      { revocations: other.bus, now, onEnd: (reason, id) => expired.push([reason, id]) },
    );
    advance(1000);
    other.call('grant:g2');
    expect(expired).toEqual([['expired', undefined]]);
  });

  it('unwatches once: at the end, and never again when the delivery unbinds afterwards', () => {
    const revoked = scriptedBus();
    const unbindRevoked = bindToCredential(
      { credentialIds: ['grant:g1'] },
      { revocations: revoked.bus, onEnd: () => {} },
    );
    revoked.call('grant:g1');
    expect(revoked.unwatched()).toBe(1);
    unbindRevoked();
    expect(revoked.unwatched()).toBe(1);

    const closed = scriptedBus();
    const ends: unknown[] = [];
    const unbind = bindToCredential(
      { credentialIds: ['grant:g2'] },
      { revocations: closed.bus, onEnd: (reason) => ends.push(reason) },
    );
    unbind();
    unbind();
    expect(closed.unwatched()).toBe(1);
    closed.call('grant:g2');
    expect(ends).toEqual([]);
  });

  it('clears its expiry timer as soon as it unbinds or is revoked', async () => {
    const { now } = fakeClock();
    const revocations = createRevocations();
    const ends: string[] = [];
    const unbind = bindToCredential(
      { credentialIds: ['grant:g1'], expiresAt: T0 + 60_000 },
      { revocations, now, onEnd: (reason) => ends.push(reason) },
    );
    expect(vi.getTimerCount()).toBe(1);
    unbind();
    expect(vi.getTimerCount()).toBe(0);
    bindToCredential(
      { credentialIds: ['grant:g2'], expiresAt: T0 + 60_000 },
      { revocations, now, onEnd: (reason) => ends.push(reason) },
    );
    expect(vi.getTimerCount()).toBe(1);
    await revocations.revoke(['grant:g2']);
    expect(vi.getTimerCount()).toBe(0);
    expect(ends).toEqual(['revoked']);
  });

  it('watches nothing without credential ids, and arms no timer without a finite expiresAt', () => {
    const { now } = fakeClock();
    const { bus, watched } = scriptedBus();
    const ends: string[] = [];
    const onEnd = (reason: string) => ends.push(reason);
    for (const expiresAt of [undefined, Number.POSITIVE_INFINITY, Number.NaN]) {
      bindToCredential({ expiresAt }, { revocations: bus, now, onEnd });
      bindToCredential({ credentialIds: [], expiresAt }, { revocations: bus, now, onEnd });
    }
    expect(watched).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
    expect(ends).toEqual([]);

    const real = createRevocations();
    bindToCredential({ expiresAt: T0 + 1000 }, { revocations: real, now, onEnd });
    expect(real.size).toBe(0);
    expect(vi.getTimerCount()).toBe(1);
  });
});

describe('createCredentialGuard(): options', () => {
  it('refuses a zero windowMs and a prefix that is not a string, with their messages', () => {
    const window = thrownTypeError(() => createCredentialGuard({ windowMs: 0 }));
    expect(window.message).toBe(
      'createCredentialGuard(): `windowMs` must be milliseconds, at least 1',
    );
    expect(window.code).toBe('ERR_INVALID_OPTION');
    const prefix = thrownTypeError(() => createCredentialGuard({ prefix: 5 as unknown as string }));
    expect(prefix.message).toBe('createCredentialGuard(): `prefix` must be a string');
    expect(prefix.code).toBe('ERR_INVALID_OPTION');
    expect(createCredentialGuard({ windowMs: '1ms', prefix: '' })).toEqual({
      check: expect.any(Function),
      refused: expect.any(Function),
      attempt: expect.any(Function),
    });
  });
});

describe('createCredentialGuard(): the 429 and the 503', () => {
  it('throttles past the limit with ERR_CREDENTIALS_THROTTLED and Retry-After to the second', async () => {
    let clock = T0;
    vi.spyOn(Date, 'now').mockImplementation(() => clock);
    const store = new MemoryRateLimitStore({ now: () => clock });
    try {
      const guard = createCredentialGuard({ limit: 2, windowMs: 60_000, store });
      await guard.refused(fakeRequest());
      await guard.check(fakeRequest());
      await guard.refused(fakeRequest());
      const third = await httpErrorOf(guard.refused(fakeRequest()));
      expect(third.status).toBe(429);
      expect(third.code).toBe('ERR_CREDENTIALS_THROTTLED');
      expect(third.detail).toBe('Too many refused credentials from this address: try again later.');
      expect(third.headers).toEqual({ 'Retry-After': '60' });
      clock += 17_500;
      const later = await httpErrorOf(() => guard.check(fakeRequest()));
      expect(later.status).toBe(429);
      expect(later.code).toBe('ERR_CREDENTIALS_THROTTLED');
      // 42.5 seconds left: rounded up
      expect(later.headers).toEqual({ 'Retry-After': '43' });
    } finally {
      store.close();
    }
  });

  it('asks for at least a second when the store still counts a window that is over', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(T0);
    const store: RateLimitStore = {
      increment: () => ({ count: 4, resetAt: T0 - 5000 }),
      peek: () => ({ count: 4, resetAt: T0 - 5000 }),
    };
    const guard = createCredentialGuard({ limit: 3, store });
    const error = await httpErrorOf(() => guard.check(fakeRequest()));
    expect(error.headers).toEqual({ 'Retry-After': '1' });
  });

  it('answers 503 with its detail and the store failure as cause, from check() and refused()', async () => {
    const down = new Error('store down');
    const failing: RateLimitStore[] = [
      { increment: () => ({ count: 1, resetAt: T0 }), peek: () => Promise.reject(down) },
      { increment: () => Promise.reject(down), peek: () => undefined },
    ];
    const [peekFails, incrementFails] = failing.map((store) => createCredentialGuard({ store }));
    for (const promise of [
      peekFails!.check(fakeRequest()) as Promise<void>, // a promise: the store answers with one
      incrementFails!.refused(fakeRequest()),
    ]) {
      const error = await httpErrorOf(promise);
      expect(error.status).toBe(503);
      expect(error.code).toBe('ERR_UNAVAILABLE');
      expect(error.detail).toBe('Credentials cannot be checked for now.');
      expect(error.headers).toEqual({ 'Retry-After': '5' });
      expect(error.cause).toBe(down);
    }
  });

  it('checks nothing before verifying with a store without peek, and still throttles at refused()', async () => {
    let count = 0;
    const store: RateLimitStore = { increment: () => ({ count: ++count, resetAt: T0 }) };
    const guard = createCredentialGuard({ limit: 1, store });
    await guard.refused(fakeRequest());
    expect(guard.check(fakeRequest())).toBeUndefined(); // nothing to peek: nothing checked
    const error = await httpErrorOf(guard.refused(fakeRequest()));
    expect(error.status).toBe(429);
  });
});

describe('createCredentialGuard(): attempt()', () => {
  /** A guard allowing one refusal, over a store whose counts the test can read. */
  function oneRefusal() {
    const store = new MemoryRateLimitStore();
    const guard = createCredentialGuard({ limit: 1, store });
    const counted = () => store.peek('refused:ip:')?.count ?? 0;
    return { guard, store, counted };
  }

  it('returns what verify returns and counts nothing when it accepts', async () => {
    const { guard, store, counted } = oneRefusal();
    try {
      expect(await guard.attempt(fakeRequest(), async () => ({ sub: 'alice' }))).toEqual({
        sub: 'alice',
      });
      expect(await guard.attempt(fakeRequest(), async () => 0)).toBe(0);
      expect(counted()).toBe(0);
      expect(guard.check(fakeRequest())).toBeUndefined(); // synchronous: the store is
    } finally {
      store.close();
    }
  });

  it('counts a refusal (undefined, or a 4xx thrown) and rethrows the verdict itself', async () => {
    const { guard, store, counted } = oneRefusal();
    try {
      const verdict = unauthorized('Wrong password.');
      const thrown = await guard
        .attempt(fakeRequest(), () => Promise.reject(verdict))
        .catch((e: unknown) => e);
      expect(thrown).toBe(verdict);
      expect(counted()).toBe(1);
      // spent: the next attempt is refused before its verify runs
      const verify = vi.fn(async () => 'alice');
      const past = await httpErrorOf(guard.attempt(fakeRequest(), verify));
      expect(past).toMatchObject({ status: 429, code: 'ERR_CREDENTIALS_THROTTLED' });
      expect(verify).not.toHaveBeenCalled();
      expect(counted()).toBe(1);
    } finally {
      store.close();
    }
    const other = oneRefusal();
    try {
      expect(await other.guard.attempt(fakeRequest(), async () => undefined)).toBeUndefined();
      expect(other.counted()).toBe(1);
    } finally {
      other.store.close();
    }
  });

  it('does not count a failure of ours (5xx, a plain Error), and rethrows it as it is', async () => {
    const { guard, store, counted } = oneRefusal();
    try {
      for (const failure of [internalError(), serviceUnavailable(), new Error('bug')]) {
        const thrown = await guard
          .attempt(fakeRequest(), () => Promise.reject(failure))
          .catch((e: unknown) => e);
        expect(thrown).toBe(failure);
      }
      expect(counted()).toBe(0);
    } finally {
      store.close();
    }
  });
});

describe('isRefusal()', () => {
  it('is true for a 4xx HttpError other than 429 only', () => {
    for (const error of [
      badRequest(),
      unauthorized(),
      forbidden(),
      notFound(),
      new HttpError(499),
    ]) {
      expect(isRefusal(error)).toBe(true);
    }
    const others = [
      tooManyRequests(5),
      internalError(),
      new HttpError(500),
      serviceUnavailable(),
      new Error('bug'),
      { status: 401 },
      { status: 401, code: 'ERR_UNAUTHORIZED' },
      // an object posing as an HttpError with a status no HttpError can have
      Object.assign(Object.create(HttpError.prototype) as object, { status: 302 }),
      null,
      undefined,
    ];
    for (const error of others) expect(isRefusal(error)).toBe(false);
  });
});

describe('isCredentialGuard() and guardOption()', () => {
  it('take only an object with check, refused and attempt', () => {
    const fn = async () => undefined;
    expect(isCredentialGuard(createCredentialGuard())).toBe(true);
    expect(isCredentialGuard({ check: fn, refused: fn, attempt: fn })).toBe(true);
    const partial = [
      { refused: fn, attempt: fn },
      { check: fn, attempt: fn },
      { check: fn, refused: fn },
      { attempt: fn },
      { check: fn },
      { check: 'yes', refused: fn, attempt: fn },
      null,
      undefined,
      'guard',
    ];
    for (const value of partial) expect(isCredentialGuard(value)).toBe(false);
  });

  it('passes a guard or undefined through, and names the owner when refusing', () => {
    const guard = createCredentialGuard();
    expect(guardOption('createUpgradeHandler()', guard)).toBe(guard);
    expect(guardOption('createUpgradeHandler()', undefined)).toBeUndefined();
    const error = thrownTypeError(() => guardOption('createUpgradeHandler()', { check: () => {} }));
    expect(error.message).toBe(
      'createUpgradeHandler(): `guard` must be a CredentialGuard (createCredentialGuard())',
    );
    expect(error.code).toBe('ERR_INVALID_OPTION');
  });
});

describe('MemoryReplayStore', () => {
  it('names itself and its maxEntries option when refusing it', () => {
    const error = thrownTypeError(() => new MemoryReplayStore({ maxEntries: 0 }));
    expect(error.message).toBe('MemoryReplayStore: `maxEntries` must be an integer, at least 1');
    expect(error.code).toBe('ERR_INVALID_OPTION');
  });
});
