import type { Principal } from '../../core/principal.js';
import type { Authenticator } from '../authenticator.js';
import { challenge } from '../authenticator.js';
import { sessionCredentialId } from '../revocations.js';
import type { SessionKeeper } from './keeper.js';
import type { SessionSettings } from './options.js';

/**
 * The `Session` authenticator of one `createSessions()`: the cookie's live session becomes
 * the principal (after the CSRF guard), and each use restarts the idle timeout. A bad
 * cookie is a 401 that clears it.
 */
export function sessionAuthenticator(
  settings: SessionSettings,
  keeper: SessionKeeper,
): Authenticator {
  return {
    scheme: 'Session',
    headers: ['Cookie'],
    // cookies have no registered scheme; this one names the cookie and never makes a browser prompt
    challenge: challenge('Cookie', { 'cookie-name': settings.cookie.name }),
    async authenticate(req) {
      const found = await keeper.lookup(req);
      if (found.kind === 'none') return undefined;
      if (found.kind !== 'ok') throw keeper.rejected(found.kind);
      await settings.assertAllowedOrigin(req);
      const record = await keeper.touch(req, found.hash, found.record);
      const principal: Principal = {
        sub: record.sub,
        scopes: [...record.scopes],
        method: 'session',
        credentialIds: [sessionCredentialId(found.hash)],
        expiresAt: record.expiresAt,
      };
      if (record.name !== undefined) principal.name = record.name;
      if (record.role !== undefined) principal.role = record.role;
      return principal;
    },
  };
}
