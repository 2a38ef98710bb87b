import { hashPassword, type MethodTable, verifyPassword } from 'portico';
import { assetRoutes } from '../browser/assets.js';

/** A demo user of the reference server. */
export interface User {
  sub: string;
  name: string;
  email: string;
  /** Path of the user's picture on this service (`/avatars/<sub>.svg`). */
  picturePath: string;
  role: 'admin' | 'user';
  /** scrypt hash: passwords are never kept in clear. */
  passwordHash: string;
}

/** Everything a signed-in user may do: the user's "full rights". */
export const USER_SCOPES: readonly string[] = Object.freeze(['read:messages', 'write:messages']);

const SEED = [
  {
    sub: 'alice',
    name: 'Alice Example',
    email: 'alice@example.com',
    picturePath: '/avatars/alice.svg',
    role: 'admin',
    password: 'alice-password',
  },
  {
    sub: 'bob',
    name: 'Bob Example',
    email: 'bob@example.com',
    picturePath: '/avatars/bob.svg',
    role: 'user',
    password: 'bob-password',
  },
] as const;

/** The user directory: seeded with the demo users, passwords hashed at start. */
export async function createUsers() {
  const users = new Map<string, User>();
  for (const { password, ...user } of SEED) {
    users.set(user.sub, { ...user, passwordHash: await hashPassword(password) });
  }
  return {
    get: (sub: string): User | undefined => users.get(sub),
    /** Checks a password in the same time whether or not the user exists. */
    async verify(username: string, password: string): Promise<User | undefined> {
      const user = users.get(username);
      const ok = await verifyPassword(password, user?.passwordHash);
      return ok && user !== undefined ? user : undefined;
    },
  };
}

export type Users = Awaited<ReturnType<typeof createUsers>>;

/** The users' pictures (the `picture` claim): small SVG files, served as they are. */
export function avatarRoutes(): Record<string, MethodTable> {
  const files: Record<string, URL> = {};
  // `/avatars/alice.svg` is the file ./avatars/alice.svg beside this one
  for (const { picturePath } of SEED)
    files[picturePath] = new URL(`.${picturePath}`, import.meta.url);
  // an image: nothing in it may load or run, and a page elsewhere may show it
  return assetRoutes(files, "default-src 'none'; frame-ancestors 'none'");
}
