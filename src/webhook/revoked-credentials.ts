import type { Revocations } from '../auth/revocations.js';
import { ExpiringMap } from '../core/expiring-map.js';
import type { WebhookEndpoint, WebhookStore } from './store.js';

/** How long a sender remembers a revoked id: past any request that registered with it. */
const REMEMBER_MS = 15 * 60_000;

/** Waits before each new try at removing a revoked credential's endpoints (store down). */
const RETRY_MS = [1000, 5000, 30_000, 120_000, 600_000];

/** What {@link endEndpointsWithCredential} is given. */
export interface CredentialEndOptions {
  store: WebhookStore;
  revocations: Revocations;
  now: () => number;
  /** Called for each endpoint this process removed (not for one another process removed first). */
  onRemoved(endpoint: WebhookEndpoint, credentialId: string): void;
}

/** What a sender asks of the watch over its endpoints' credentials. */
export interface CredentialEnd {
  /** Whether `endpoint` was registered with a credential this process heard revoked. */
  isRevoked(endpoint: Pick<WebhookEndpoint, 'credentialIds'>): boolean;
  /** Stops listening and retrying. */
  close(): void;
}

/**
 * Ends webhook endpoints with their credential: each revoked id heard on `revocations` (here
 * or from another process) removes, through the store's credential index, every endpoint
 * registered with it, pending deliveries included. Removal is idempotent, so every process
 * may run it; a store failure is retried. The ids heard are remembered for 15 minutes, so
 * that nothing is queued or sent for such an endpoint meanwhile, and an endpoint registered
 * by a request still in flight when the revocation came is refused.
 * @internal
 */
export function endEndpointsWithCredential(options: CredentialEndOptions): CredentialEnd {
  const { store, revocations, now, onRemoved } = options;
  const heard = new ExpiringMap<true>(
    'createWebhookSender()',
    { now },
    { maxEntries: 100_000, maxEntriesOption: 'maxEntries' },
  );
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  async function removeAll(credentialId: string): Promise<void> {
    const endpoints = await store.listEndpoints({ credentialId });
    for (const endpoint of endpoints) {
      if (await store.deleteEndpoint(endpoint.id)) onRemoved(endpoint, credentialId);
    }
  }

  function remove(credentialId: string, tries = 0): void {
    removeAll(credentialId).catch(() => {
      const wait = RETRY_MS[tries];
      if (closed || wait === undefined) return;
      const timer = setTimeout(() => {
        timers.delete(timer);
        remove(credentialId, tries + 1);
      }, wait);
      timer.unref();
      timers.add(timer);
    });
  }

  const unlisten = revocations.listen((credentialId) => {
    // heard synchronously, inside `revoke`: nothing is queued or sent for it from here on
    heard.set(credentialId, true, now() + REMEMBER_MS);
    remove(credentialId);
  });

  return {
    isRevoked: (endpoint) => endpoint.credentialIds?.some((id) => heard.get(id) === true) ?? false,
    close() {
      closed = true;
      unlisten();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
