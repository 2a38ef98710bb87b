// The one-time ids of DPoP proofs: `check` verifies a proof and records nothing, its
// `remember()` records the jti once (a racing replay loses); MemoryReplayStore gives each
// partition (a proof key, a client) a share of its room, refusing one past it (429) while the
// others keep theirs, and the whole store still fails closed when full (503).
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { createDpopVerifier, DpopProofError } from '../../../src/auth/dpop/dpop.js';
import { MemoryReplayStore } from '../../../src/auth/replay/store.js';
import { HttpError } from '../../../src/core/errors/http-error.js';

const URL_ = 'https://api.example.com/token';
const request = { method: 'POST', url: URL_ };

async function proof(): Promise<string> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(pair.publicKey);
  return new SignJWT({
    jti: randomUUID(),
    htm: 'POST',
    htu: URL_,
    iat: Math.floor(Date.now() / 1000),
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
    .sign(pair.privateKey);
}

const outcome = (promise: Promise<unknown>) =>
  promise.then(
    () => 'recorded',
    (error: unknown) => error,
  );

describe('DpopVerifier.check', () => {
  it('records nothing: the jti is recorded by remember(), once', async () => {
    const replay = new MemoryReplayStore();
    const dpop = createDpopVerifier({ replay });
    const made = await proof();
    const checked = await dpop.check(made, request);
    const again = await dpop.check(made, request); // not recorded yet: it still holds
    expect(again.jti).toBe(checked.jti);
    expect(replay.seen(`${checked.jkt}:${checked.jti}`)).toBe(false);
    await checked.remember();
    expect(replay.seen(`${checked.jkt}:${checked.jti}`)).toBe(true);
    await expect(checked.remember()).resolves.toBeUndefined(); // the first call's outcome
    await expect(again.remember()).rejects.toThrow('The DPoP proof was used already.');
    await expect(dpop.verify(made, request)).rejects.toBeInstanceOf(DpopProofError);
  });

  it('lets one of two checked uses of one proof record it, racing', async () => {
    const dpop = createDpopVerifier();
    const made = await proof();
    const [a, b] = await Promise.all([dpop.check(made, request), dpop.check(made, request)]);
    const results = await Promise.all([outcome(a.remember()), outcome(b.remember())]);
    expect(results.filter((r) => r === 'recorded')).toHaveLength(1);
    expect(results.find((r) => r !== 'recorded')).toMatchObject({ error: 'invalid_dpop_proof' });
  });
});

describe('MemoryReplayStore partitions', () => {
  it('refuses a partition past its share with a 429, and keeps room for the others', () => {
    let clock = 1_000_000;
    const replay = new MemoryReplayStore({
      maxEntries: 10,
      maxEntriesPerPartition: 3,
      now: () => clock,
    });
    for (const id of ['a1', 'a2', 'a3']) expect(replay.remember(id, 10_000, 'a')).toBe(true);
    const spent = (() => {
      try {
        replay.remember('a4', 10_000, 'a');
      } catch (error) {
        return error;
      }
    })();
    expect(spent).toBeInstanceOf(HttpError);
    expect(spent).toMatchObject({ status: 429, code: 'ERR_REPLAY_SHARE_SPENT' });
    expect((spent as HttpError).headers['Retry-After']).toBe('10');
    expect(replay.seen('a4')).toBe(false); // refused, not recorded
    expect(replay.remember('a1', 10_000, 'a')).toBe(false); // a replay is still a replay
    expect(replay.remember('b1', 10_000, 'b')).toBe(true);
    clock += 10_000; // a's ids expire: its share is back
    expect(replay.remember('a4', 10_000, 'a')).toBe(true);
  });

  it('recounts a share whose ids have varied lifetimes', () => {
    let clock = 1_000_000;
    const replay = new MemoryReplayStore({ maxEntriesPerPartition: 2, now: () => clock });
    expect(replay.remember('long', 60_000, 'p')).toBe(true);
    expect(replay.remember('short', 1_000, 'p')).toBe(true);
    clock += 1_000; // `short` is gone, though written after `long`
    expect(replay.remember('next', 60_000, 'p')).toBe(true);
  });

  it('answers a full store with its 503 first, partition or not', () => {
    const replay = new MemoryReplayStore({ maxEntries: 2, maxEntriesPerPartition: 1 });
    expect(replay.remember('a', 60_000, 'p')).toBe(true);
    expect(replay.remember('b', 60_000)).toBe(true);
    expect(() => replay.remember('c', 60_000, 'p')).toThrow(
      expect.objectContaining({ status: 503, code: 'ERR_STORE_FULL' }),
    );
  });

  it('gives a partition a tenth of maxEntries unless told, and checks the option', () => {
    const replay = new MemoryReplayStore({ maxEntries: 30 });
    for (const id of ['1', '2', '3']) replay.remember(id, 60_000, 'p');
    expect(() => replay.remember('4', 60_000, 'p')).toThrow(
      expect.objectContaining({ status: 429 }),
    );
    expect(() => new MemoryReplayStore({ maxEntriesPerPartition: 0 })).toThrow(
      'MemoryReplayStore: `maxEntriesPerPartition` must be an integer, at least 1',
    );
  });
});
