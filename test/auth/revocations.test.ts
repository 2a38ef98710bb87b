import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  bindToCredential,
  createApiKey,
  createRevocations,
  MemoryApiKeyStore,
  processRevocations,
} from '../../src/auth/index.js';
import { createHub } from '../../src/realtime/index.js';
import { RedisBroker } from '../../src/redis/index.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';

describe('createRevocations()', () => {
  it('ends the watchers of an id synchronously, before revoke() returns, once each', async () => {
    const revocations = createRevocations();
    const ended: string[] = [];
    revocations.watch(['api_key:k1', 'grant:g1'], (id) => ended.push(`a:${id}`));
    revocations.watch(['grant:g1'], (id) => ended.push(`b:${id}`));
    revocations.watch(['grant:g2'], (id) => ended.push(`c:${id}`));
    expect(revocations.size).toBe(3);
    const pending = revocations.revoke(['grant:g1']);
    // told before the first await: nothing published after the revoke can reach them
    expect(ended).toEqual(['a:grant:g1', 'b:grant:g1']);
    await pending;
    await revocations.revoke(['api_key:k1', 'grant:g1']);
    expect(ended).toEqual(['a:grant:g1', 'b:grant:g1']);
    expect(revocations.size).toBe(1);
  });

  it('stops watching when told, and survives a watcher that throws', async () => {
    const revocations = createRevocations();
    const seen: string[] = [];
    const stop = revocations.watch(['x'], () => seen.push('stopped'));
    revocations.watch(['x'], () => {
      throw new Error('boom');
    });
    revocations.watch(['x'], () => seen.push('kept'));
    stop();
    await revocations.revoke(['x']);
    expect(seen).toEqual(['kept']);
    expect(revocations.size).toBe(0);
  });

  it('tells listeners of every revoked id', async () => {
    const revocations = createRevocations();
    const heard: string[] = [];
    const stop = revocations.listen((id) => heard.push(id));
    await revocations.revoke(['grant:a', 'api_key:b']);
    stop();
    await revocations.revoke(['grant:c']);
    expect(heard).toEqual(['grant:a', 'api_key:b']);
  });

  it('is the process default for the stores: deleting an API key ends its watchers', async () => {
    const store = new MemoryApiKeyStore();
    const { record } = await createApiKey(store, { owner: 'alice' });
    let ended = false;
    processRevocations().watch([`api_key:${record.id}`], () => {
      ended = true;
    });
    store.delete(record.id);
    expect(ended).toBe(true);
  });

  it('refuses a transport that is not a hub', () => {
    // @ts-expect-error: not a transport
    expect(() => createRevocations({ transport: {} })).toThrow(/transport/);
    expect(() => createRevocations({ channel: '' })).toThrow(/channel/);
  });
});

describe('bindToCredential()', () => {
  it('ends at the first revoked id, and unbinds from the rest', async () => {
    const revocations = createRevocations();
    const ends: unknown[] = [];
    bindToCredential(
      { credentialIds: ['grant:g', 'token:t'], expiresAt: Date.now() + 60_000 },
      { revocations, onEnd: (reason, id) => ends.push([reason, id]) },
    );
    await revocations.revoke(['token:t']);
    await revocations.revoke(['grant:g']);
    expect(ends).toEqual([['revoked', 'token:t']]);
    expect(revocations.size).toBe(0);
  });

  it('ends at expiresAt, at once when already past, and not after an unbind', () => {
    // the injected clock (`now`) and fake timers move together: the deadlines are met
    // exactly, whatever the load on the machine
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let clock = 1_700_000_000_000;
      const now = () => clock;
      const advance = (ms: number) => {
        clock += ms;
        vi.advanceTimersByTime(ms);
      };
      const revocations = createRevocations();
      const ends: string[] = [];
      bindToCredential(
        { expiresAt: clock + 80 },
        { revocations, now, onEnd: (r) => ends.push(`soon:${r}`) },
      );
      bindToCredential(
        { expiresAt: clock - 1 },
        { revocations, now, onEnd: (r) => ends.push(`past:${r}`) },
      );
      const unbind = bindToCredential(
        { credentialIds: ['x'], expiresAt: clock + 40 },
        { revocations, now, onEnd: (r) => ends.push(`unbound:${r}`) },
      );
      expect(ends).toEqual(['past:expired']);
      unbind();
      // past the unbound one's deadline (40), just short of the other's (80)
      advance(79);
      expect(ends).toEqual(['past:expired']);
      advance(1);
      expect(ends).toEqual(['past:expired', 'soon:expired']);
      // long after: nothing more, and no timer left behind
      advance(10_000);
      expect(ends).toEqual(['past:expired', 'soon:expired']);
      expect(vi.getTimerCount()).toBe(0);
      expect(revocations.size).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe.skipIf(!hasRedis)('revocations across processes (real redis-server)', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('a revocation in one process ends the watchers of another', async () => {
    const [a, b] = [redis.client(), redis.client()];
    const hubA = createHub({ broker: new RedisBroker({ client: a, prefix: 't:rev:' }) });
    const hubB = createHub({ broker: new RedisBroker({ client: b, prefix: 't:rev:' }) });
    const inA = createRevocations({ transport: hubA });
    const inB = createRevocations({ transport: hubB });
    try {
      // the subscriptions are active once a probe crosses
      const probe = new Promise<void>((resolve) => inB.watch(['probe'], () => resolve()));
      await inA.revoke(['probe']);
      await probe;
      const ended = new Promise<string>((resolve) => inB.watch(['grant:g9'], resolve));
      const started = Date.now();
      await inA.revoke(['grant:g9']);
      expect(await ended).toBe('grant:g9');
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      inA.close();
      inB.close();
      await Promise.all([hubA.close(), hubB.close()]);
      a.disconnect();
      b.disconnect();
    }
  });
});
