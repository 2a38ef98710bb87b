// The provider's tokens of a signed-in user, kept server-side beside the session: sealed with
// the deployment's keys in a record store (never in a cookie), the access token refreshed
// shortly before it expires, one refresh at a time per session (across processes too: a
// record's version decides who wrote last), revoked at sign-out.
import { randomBytes } from 'node:crypto';
import { unauthorized } from '../core/errors/errors.js';
import type { RecordStore } from '../oauth/store/store.js';
import { providerFailure } from './failures.js';
import { loadOpenidClient } from './openid-client.js';
import type { ProviderInternals, UpstreamProvider } from './provider.js';
import type { Sealer } from './seal.js';
import { expiryOf } from './tokens.js';

/** The kind of the records in the store. */
const KIND = 'portico-upstream-tokens';

/** What is kept (sealed) per session. */
interface Kept {
  accessToken: string;
  tokenType: string;
  refreshToken?: string;
  /** Epoch ms, when the provider said. */
  expiresAt?: number;
  scope?: string;
}

/** A sealed record: its version counts the refreshes. */
interface Stored {
  sealed: string;
  version: number;
}

const isStored = (value: unknown): value is Stored =>
  typeof (value as Stored)?.sealed === 'string' && Number.isInteger((value as Stored)?.version);

export interface UserTokenKeeper {
  /** Keeps `tokens` for a new session: the handle to put in the session's data. */
  keep(tokens: Kept, ttlMs: number): Promise<string>;
  /** A valid access token of the session's handle, refreshed when it is about to expire. */
  accessToken(handle: string, provider: UpstreamProvider, at: ProviderInternals): Promise<string>;
  /** Revokes the refresh token at the provider (when it can) and forgets the tokens. */
  forget(handle: string, at: ProviderInternals): Promise<void>;
}

export function createUserTokenKeeper(options: {
  store: RecordStore;
  sealer: Sealer;
  refreshBefore: number;
}): UserTokenKeeper {
  const { store, sealer, refreshBefore } = options;
  /** The refreshes under way in this process, per handle: concurrent callers share one. */
  const refreshing = new Map<string, Promise<Kept>>();
  /** How long a kept record lives (set by `keep`, kept by `replace`). */
  const SEAL_MS = 400 * 24 * 3600 * 1000;

  async function load(handle: string): Promise<{ kept: Kept; version: number } | undefined> {
    const found = await store.find(KIND, handle);
    if (found === undefined || found.state !== 'fresh' || !isStored(found.record)) return undefined;
    const kept = (await sealer.open(found.record.sealed)) as Kept | undefined;
    return kept === undefined ? undefined : { kept, version: found.record.version };
  }

  async function refresh(handle: string, at: ProviderInternals, label: string): Promise<Kept> {
    const held = await load(handle);
    if (held === undefined) throw signInAgain(label);
    const { kept, version } = held;
    // another caller (or process) may have refreshed it meanwhile
    if (!expiring(kept)) return kept;
    if (kept.refreshToken === undefined) throw signInAgain(label);
    const client = await loadOpenidClient();
    const config = await at.configuration();
    let response: Awaited<ReturnType<typeof client.refreshTokenGrant>>;
    try {
      response = await client.refreshTokenGrant(config, kept.refreshToken);
    } catch (error) {
      // a rotated refresh token used by another process first: its tokens are in the store
      const now = await load(handle);
      if (now !== undefined && now.version !== version && !expiring(now.kept)) return now.kept;
      if ((error as { name?: unknown }).name === 'ResponseBodyError') throw signInAgain(label);
      throw providerFailure(error, label, 'refreshing the access token');
    }
    const expiresAt = expiryOf(response);
    const next: Kept = {
      accessToken: response.access_token,
      tokenType: response.token_type,
      // a provider that does not rotate keeps the refresh token it gave
      ...((response.refresh_token ?? kept.refreshToken) !== undefined && {
        refreshToken: response.refresh_token ?? kept.refreshToken,
      }),
      ...(expiresAt !== undefined && { expiresAt }),
      ...((response.scope ?? kept.scope) !== undefined && { scope: response.scope ?? kept.scope }),
    };
    const sealed = await sealer.seal({ ...next }, SEAL_MS);
    const written = await store.replace(
      KIND,
      handle,
      { sealed, version: version + 1 },
      { version },
    );
    if (!written) {
      // another process wrote first: its tokens win (ours are valid too, but one set is kept)
      const now = await load(handle);
      if (now !== undefined) return now.kept;
    }
    return next;
  }

  const expiring = (kept: Kept) =>
    kept.expiresAt !== undefined && kept.expiresAt - refreshBefore <= Date.now();

  const signInAgain = (label: string) =>
    unauthorized(`The sign-in at ${label} has ended: sign in again.`, {
      code: 'ERR_AUTH_EXPIRED',
    });

  return {
    async keep(tokens, ttlMs) {
      const handle = randomBytes(24).toString('base64url');
      const sealed = await sealer.seal({ ...tokens }, SEAL_MS);
      await store.save(KIND, handle, { sealed, version: 0 }, ttlMs);
      return handle;
    },
    async accessToken(handle, provider, at) {
      const held = await load(handle);
      if (held === undefined) throw signInAgain(provider.label);
      if (!expiring(held.kept)) return held.kept.accessToken;
      let running = refreshing.get(handle);
      if (running === undefined) {
        running = refresh(handle, at, provider.label).finally(() => refreshing.delete(handle));
        refreshing.set(handle, running);
      }
      return (await running).accessToken;
    },
    async forget(handle, at) {
      const held = await load(handle).catch(() => undefined);
      await store.destroy(KIND, handle);
      const token = held?.kept.refreshToken ?? held?.kept.accessToken;
      if (token === undefined) return;
      const config = await at.configuration().catch(() => undefined);
      if (config?.serverMetadata().revocation_endpoint === undefined) return;
      const client = await loadOpenidClient();
      // best effort: the session is over here whatever the provider answers
      await client.tokenRevocation(config, token).catch(() => undefined);
    },
  };
}
