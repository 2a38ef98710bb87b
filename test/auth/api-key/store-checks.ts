// What every ApiKeyStore does, checked the same way for the memory store and for the Redis
// store on each of its targets.
import { expect } from 'vitest';
import { hashApiKey } from '../../../src/auth/api-key/api-key.js';
import type { ApiKeyRecord, ApiKeyStore } from '../../../src/auth/api-key/store.js';
import { apiKeyCredentialId, type Revocations } from '../../../src/auth/revocations.js';

/**
 * `store` (announcing on `revocations`) announces the revocation of `key_r` when its record is
 * replaced with another hash, owner or scopes, and not when it is saved again as it was.
 */
export async function expectReplacementsRevoked(
  store: ApiKeyStore,
  revocations: Revocations,
): Promise<void> {
  const heard: string[] = [];
  const listen = () => revocations.watch([apiKeyCredentialId('key_r')], (id) => heard.push(id));
  const original: ApiKeyRecord = {
    id: 'key_r',
    hash: hashApiKey('secret-r'),
    owner: 'alice',
    createdAt: '2030-01-01T00:00:00.000Z',
    scopes: ['read:messages'],
  };
  const stop = listen();
  await store.save(original);
  await store.save({ ...original });
  expect(heard).toEqual([]);
  stop();
  for (const change of [
    { hash: hashApiKey('rotated') },
    { owner: 'bob' },
    { scopes: ['read:messages', 'write:messages'] },
  ]) {
    heard.length = 0;
    // a watcher ends with the first revocation it hears: a new one for each change
    const stopThis = listen();
    await store.save({ ...(await store.get('key_r'))!, ...change });
    stopThis();
    expect(heard, JSON.stringify(change)).toEqual([apiKeyCredentialId('key_r')]);
  }
}
