// The principal slot moved to core (`src/core/principal.ts`), so that what runs after
// authentication reads it without depending on auth; re-exported here for now.
export {
  type AuthMethod,
  getPrincipal,
  type Principal,
  principalKey,
  requirePrincipal,
  setPrincipal,
} from '../core/principal.js';
