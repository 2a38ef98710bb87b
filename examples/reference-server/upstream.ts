// Signing in at an upstream provider (identity brokering): with `UPSTREAM_ISSUER` set, the
// reference server is a relying party of that OpenID Provider. A user signed in there gets a
// portico session as `<upstream sub>@<host>` (never a local user's name), and the clients of
// portico's own authorization server get portico's tokens for that subject.
import { randomBytes } from 'node:crypto';
import type { Sessions } from 'portico';
import type { ReplayStore } from 'portico/auth';
import { createSignIn, type SignIn, upstreamProvider } from 'portico/client';
import { MemoryRecordStore, type RecordStore } from 'portico/oauth';
import { USER_SCOPES } from './users.js';

/** `UPSTREAM_*`: the provider, when `UPSTREAM_ISSUER` is set. */
export interface UpstreamConfig {
  issuer: string;
  clientId: string;
  clientSecret: string | undefined;
  /** `UPSTREAM_NAME` (`Upstream`): what the pages call it. */
  name: string;
}

/** A user who signed in upstream, as the ID tokens and UserInfo of portico describe them. */
export interface LinkedUser {
  sub: string;
  name: string;
  email: string | undefined;
}

/** The upstream sign-in of the service, and the users it linked. */
export interface Upstream {
  readonly signIn: SignIn;
  /** The service's `BASE_URL`. */
  readonly baseUrl: string;
  /** The linked user `sub`, if this deployment has seen them (any process, with Redis). */
  user(sub: string): Promise<LinkedUser | undefined>;
}

/** How long a linked user's profile is kept after their last upstream sign-in. */
const LINK_TTL_MS = 30 * 24 * 3600 * 1000;
const LINK_KIND = 'ref-upstream-user';

/** `<sub>@<host>`: the upstream issuer's host, with its port when it has one. */
export function linkedSubject(sub: string, issuer: string): string {
  return `${sub}@${new URL(issuer).host}`;
}

export async function createUpstream(options: {
  config: UpstreamConfig;
  baseUrl: string;
  sessions: Sessions;
  /** Shared state: where linked users are kept, the agreed key and the replay store. */
  store: RecordStore | undefined;
  agreed(name: string, make: () => string): Promise<string>;
  replay: ReplayStore | undefined;
}): Promise<Upstream> {
  const { config } = options;
  const store = options.store ?? new MemoryRecordStore();
  const provider = upstreamProvider({
    name: 'upstream',
    label: config.name,
    issuer: config.issuer,
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    clientAuth: config.clientSecret === undefined ? 'none' : 'client_secret_basic',
  });
  // every process seals and opens the sign-in cookie with one key
  const secret = await options.agreed('sign-in-key', () => randomBytes(32).toString('base64url'));
  const signIn = createSignIn({
    baseUrl: options.baseUrl,
    secret,
    sessions: options.sessions,
    providers: [provider],
    ...(options.replay !== undefined && { replay: options.replay }),
    async toUser({ claims }) {
      const sub = linkedSubject(claims.sub, config.issuer);
      const user: LinkedUser = {
        sub,
        name: typeof claims.name === 'string' && claims.name !== '' ? claims.name : sub,
        email: typeof claims.email === 'string' ? claims.email : undefined,
      };
      await store.save(LINK_KIND, sub, user, LINK_TTL_MS);
      return { sub, name: user.name, role: 'user', scopes: USER_SCOPES };
    },
  });
  return {
    signIn,
    baseUrl: options.baseUrl,
    async user(sub) {
      const found = await store.find(LINK_KIND, sub);
      const record = found?.record as Partial<LinkedUser> | undefined;
      return typeof record?.sub === 'string' && typeof record.name === 'string'
        ? { sub: record.sub, name: record.name, email: record.email }
        : undefined;
    },
  };
}
