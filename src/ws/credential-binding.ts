import type { WebSocket } from 'ws';
import { bindToCredential, type CredentialEnd, type Revocations } from '../auth/revocations.js';
import type { Principal } from '../core/principal.js';
import { CloseCode } from './close-codes.js';

function noop(): void {}

/**
 * Closes `ws` with 1008 (`credential revoked` / `credential expired`) when the credential of
 * `principal` ends, after `onEnd` ran (synchronously, inside `revoke()`: drop the connection
 * from everything that could still send to it there). Nothing is bound for a principal whose
 * credential can neither be revoked nor expire. Unbound when the socket closes first.
 */
export function closeWithCredential(
  ws: WebSocket,
  principal: Principal | undefined,
  revocations: Revocations | undefined,
  onEnd: () => void = noop,
): void {
  if (principal === undefined) return;
  if ((principal.credentialIds ?? []).length === 0 && principal.expiresAt === undefined) return;
  let ended = false;
  const unbind = bindToCredential(principal, {
    ...(revocations !== undefined && { revocations }),
    onEnd: (reason: CredentialEnd) => {
      ended = true;
      onEnd();
      try {
        ws.close(CloseCode.POLICY_VIOLATION, `credential ${reason}`);
      } catch {
        ws.terminate();
      }
    },
  });
  if (!ended) ws.once('close', unbind);
}
