// The authorization server's shared context and its memory store at the edges the main suites
// leave out: every option check of createOAuthContext() (exact messages, each required option
// missing or null, the issuer's query and fragment, the `fapi2` switch against DPoP and the
// signing algorithm, which clients a `fapi2` list holds), `idTokenClaims: 'all'` reaching the ID
// tokens, and MemoryRecordStore's own edges: its option messages, the device-code expiry
// boundary, the user-code index filling before the device codes, a stale user code, and a
// deleted consent giving its place back. Each context and store is built inside its test, so
// that the code under test is the test's own.
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { createCredentialGuard } from '../../src/auth/credential-guard.js';
import { createSessions } from '../../src/auth/session/session.js';
import type { OAuthClient } from '../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../src/oauth/clients/store.js';
import { type AuthorizationServerOptions, createOAuthContext } from '../../src/oauth/context.js';
import {
  consents,
  type DeviceCodeRecord,
  deviceCodes,
  isDeviceCodeExpired,
} from '../../src/oauth/store/records.js';
import { MemoryRecordStore } from '../../src/oauth/store/store.js';
import { createKeySet } from '../../src/oauth/tokens/key-set.js';

const ISSUER = 'https://auth.example.test';
const RS256_KEYS = createKeySet();
const ES256_KEYS = createKeySet({ algorithm: 'ES256' });
const EDDSA_KEYS = createKeySet({ algorithm: 'EdDSA' });

/** Options with every required one, over `keys` (RS256 unless told), and `extra` on top. */
async function options(
  extra: Partial<AuthorizationServerOptions> = {},
  keys = RS256_KEYS,
): Promise<AuthorizationServerOptions> {
  return {
    issuer: ISSUER,
    clients: new MemoryClientStore([]),
    keys: await keys,
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: [ISSUER], cookie: { secure: false } }),
    ...extra,
  };
}

/** The error `build` throws, or `undefined`. */
function refusal(build: () => unknown): unknown {
  try {
    build();
    return undefined;
  } catch (err) {
    return err;
  }
}

/** What an option refusal must look like: an ERR_INVALID_OPTION TypeError with this message. */
function expectInvalid(err: unknown, message: string): void {
  expect(err).toBeInstanceOf(TypeError);
  expect((err as TypeError).message).toBe(message);
  expect((err as TypeError & { code?: string }).code).toBe('ERR_INVALID_OPTION');
}

// fapi2 reads only the client id
const client = (clientId: string) => ({ clientId }) as OAuthClient;

describe('createOAuthContext(): the issuer', () => {
  it('refuses an issuer that is not an absolute URL, with its own message', async () => {
    const opts = await options({ issuer: 'auth.example.test/' });
    expectInvalid(
      refusal(() => createOAuthContext(opts)),
      'createAuthorizationServer(): `issuer` must be an absolute URL',
    );
  });

  it('refuses an issuer with a query, and one with a fragment (RFC 8414 §2)', async () => {
    const message =
      'createAuthorizationServer(): `issuer` must have no query or fragment (RFC 8414 §2)';
    // an empty query or fragment (`search` and `hash` read '' for them) is one all the same
    for (const issuer of [
      `${ISSUER}?tenant=a`,
      `${ISSUER}#top`,
      `${ISSUER}/?a=1#b`,
      `${ISSUER}?`,
      `${ISSUER}#`,
      `${ISSUER}/tenant-a?#`,
    ]) {
      const opts = await options({ issuer });
      expectInvalid(
        refusal(() => createOAuthContext(opts)),
        message,
      );
    }
    // an issuer with a path and neither is taken as it is
    const ctx = createOAuthContext(await options({ issuer: `${ISSUER}/tenant-a` }));
    expect(ctx.issuer).toBe(`${ISSUER}/tenant-a`);
  });
});

describe('createOAuthContext(): the required options', () => {
  it('names each required option that is missing or null', async () => {
    for (const name of ['clients', 'keys', 'users', 'sessions'] as const) {
      for (const value of [undefined, null]) {
        const opts = { ...(await options()), [name]: value };
        expectInvalid(
          refusal(() => createOAuthContext(opts)),
          `createAuthorizationServer(): \`${name}\` is required`,
        );
      }
    }
  });

  it('names itself when the guard is not a CredentialGuard', async () => {
    const opts = await options({ guard: {} as never });
    expectInvalid(
      refusal(() => createOAuthContext(opts)),
      'createAuthorizationServer(): `guard` must be a CredentialGuard (createCredentialGuard())',
    );
    const guard = createCredentialGuard();
    expect(createOAuthContext(await options({ guard })).guard).toBe(guard);
  });
});

describe('createOAuthContext(): booleans, claims and the pushed-request lifetime', () => {
  it('refuses a requirePushedAuthorizationRequests that is not a boolean, and defaults it to false', async () => {
    for (const value of ['yes', 1, null]) {
      const opts = await options({ requirePushedAuthorizationRequests: value as never });
      expectInvalid(
        refusal(() => createOAuthContext(opts)),
        'createAuthorizationServer(): `requirePushedAuthorizationRequests` must be a boolean',
      );
    }
    expect(createOAuthContext(await options()).settings.requirePushedAuthorizationRequests).toBe(
      false,
    );
    const on = createOAuthContext(await options({ requirePushedAuthorizationRequests: true }));
    expect(on.settings.requirePushedAuthorizationRequests).toBe(true);
  });

  it("takes idTokenClaims 'scope' and 'all', refuses anything else", async () => {
    for (const value of ['scope', 'all', undefined] as const) {
      const opts = await options({ idTokenClaims: value });
      expect(refusal(() => createOAuthContext(opts))).toBeUndefined();
    }
    for (const value of ['', 'none', 'ALL']) {
      const opts = await options({ idTokenClaims: value as never });
      expectInvalid(
        refusal(() => createOAuthContext(opts)),
        "createAuthorizationServer(): `idTokenClaims` must be 'scope' or 'all'",
      );
    }
  });

  it("releases every claim the user has in ID tokens under idTokenClaims 'all', by scope otherwise", async () => {
    const user = { sub: 'alice', name: 'Alice', email: 'alice@example.test', picture: 'p.png' };
    const request = { clientId: 'web', user, scope: ['openid'] };
    const all = createOAuthContext(await options({ idTokenClaims: 'all' }));
    expect(decodeJwt(await all.tokens.idToken(request))).toMatchObject({
      sub: 'alice',
      name: 'Alice',
      email: 'alice@example.test',
      picture: 'p.png',
      aud: 'web',
      iss: ISSUER,
    });
    for (const idTokenClaims of ['scope', undefined] as const) {
      const byScope = createOAuthContext(await options({ idTokenClaims }));
      const claims = decodeJwt(await byScope.tokens.idToken(request));
      expect(claims.sub).toBe('alice');
      expect(claims.name).toBeUndefined();
      expect(claims.email).toBeUndefined();
      expect(claims.picture).toBeUndefined();
    }
  });

  it('keeps pushedRequestTtl within 1 s and 10 min, naming it', async () => {
    const message =
      'createAuthorizationServer(): `pushedRequestTtl` must be milliseconds, 1000–600000';
    for (const pushedRequestTtl of [999, 0, 600_001]) {
      const opts = await options({ pushedRequestTtl });
      expectInvalid(
        refusal(() => createOAuthContext(opts)),
        message,
      );
    }
    for (const pushedRequestTtl of [1_000, 600_000]) {
      const ctx = createOAuthContext(await options({ pushedRequestTtl }));
      expect(ctx.settings.pushedRequestTtl).toBe(pushedRequestTtl);
    }
    expect(createOAuthContext(await options()).settings.pushedRequestTtl).toBe(60_000);
  });
});

describe('createOAuthContext(): the fapi2 switch', () => {
  it('holds no client when fapi2 is left out or false, even with DPoP off or RS256 keys', async () => {
    for (const extra of [{}, { fapi2: false }, { fapi2: false, dpop: false as const }]) {
      const ctx = createOAuthContext(await options(extra));
      expect(ctx.fapi2(client('bank'))).toBe(false);
    }
  });

  it('holds every client when fapi2 is true, with ES256 or EdDSA keys', async () => {
    for (const keys of [ES256_KEYS, EDDSA_KEYS]) {
      const ctx = createOAuthContext(await options({ fapi2: true }, keys));
      expect(ctx.fapi2(client('bank'))).toBe(true);
      expect(ctx.fapi2(client('anyone'))).toBe(true);
    }
  });

  it('holds only the listed clients when fapi2 is a list', async () => {
    for (const keys of [ES256_KEYS, EDDSA_KEYS]) {
      const ctx = createOAuthContext(await options({ fapi2: ['bank', 'broker'] }, keys));
      expect(ctx.fapi2(client('bank'))).toBe(true);
      expect(ctx.fapi2(client('broker'))).toBe(true);
      expect(ctx.fapi2(client('shop'))).toBe(false);
    }
    const none = createOAuthContext(await options({ fapi2: [] }, ES256_KEYS));
    expect(none.fapi2(client('bank'))).toBe(false);
  });

  it('refuses a fapi2 that is neither a boolean nor a list of client ids', async () => {
    for (const fapi2 of ['bank', ['bank', 7], 1, null]) {
      const opts = await options({ fapi2: fapi2 as never }, ES256_KEYS);
      expectInvalid(
        refusal(() => createOAuthContext(opts)),
        'createAuthorizationServer(): `fapi2` must be a boolean or a list of client ids',
      );
    }
  });

  it('refuses fapi2 with DPoP off', async () => {
    for (const fapi2 of [true, ['bank']]) {
      const opts = await options({ fapi2, dpop: false }, ES256_KEYS);
      expectInvalid(
        refusal(() => createOAuthContext(opts)),
        'createAuthorizationServer(): `fapi2` needs DPoP (sender-constrained tokens)',
      );
    }
  });

  it('refuses fapi2 with keys that sign RS256', async () => {
    for (const fapi2 of [true, ['bank']]) {
      const opts = await options({ fapi2 }, RS256_KEYS);
      expectInvalid(
        refusal(() => createOAuthContext(opts)),
        'createAuthorizationServer(): `fapi2` needs keys that sign with ES256 or EdDSA (FAPI 2.0, cryptography)',
      );
    }
  });
});

describe('isDeviceCodeExpired', () => {
  const record: DeviceCodeRecord = {
    clientId: 'tv',
    scope: ['read:messages'],
    userCode: 'BCDFGHJK',
    status: 'pending',
    interval: 5_000,
    grantId: 'g',
  };

  it('expires a device code at its expiresAt exactly, not a millisecond before', () => {
    const timed = { ...record, expiresAt: 10_000 };
    expect(isDeviceCodeExpired(timed, 9_999)).toBe(false);
    expect(isDeviceCodeExpired(timed, 10_000)).toBe(true);
    expect(isDeviceCodeExpired(timed, 10_001)).toBe(true);
    expect(isDeviceCodeExpired(record, Number.MAX_SAFE_INTEGER)).toBe(false);
  });
});

describe('MemoryRecordStore: options', () => {
  it('names itself and the option in its refusals', () => {
    expectInvalid(
      refusal(() => new MemoryRecordStore({ maxEntrys: 5 } as never)),
      'MemoryRecordStore: unknown option `maxEntrys`. Did you mean `maxEntries`?',
    );
    for (const maxEntries of [0, 1.5, -1]) {
      expectInvalid(
        refusal(() => new MemoryRecordStore({ maxEntries })),
        'MemoryRecordStore: `maxEntries` must be an integer, at least 1',
      );
    }
    expectInvalid(
      refusal(() => new MemoryRecordStore({ now: 5 as never })),
      'MemoryRecordStore: `now` must be a function returning epoch milliseconds',
    );
  });
});

describe('MemoryRecordStore: device codes and their user-code index', () => {
  const device = (userCode: string): DeviceCodeRecord => ({
    clientId: 'tv',
    scope: ['read:messages'],
    userCode,
    status: 'pending',
    interval: 5_000,
    grantId: `grant-${userCode}`,
  });

  it('saves a device code again under its own user code when full (the index needs no new place)', () => {
    const clock = { t: 1_000 };
    const store = new MemoryRecordStore({ maxEntries: 1, now: () => clock.t });
    deviceCodes(store).save('h1', device('AAAABBBB'), 60_000);
    deviceCodes(store).save('h1', { ...device('AAAABBBB'), status: 'denied' }, 60_000);
    expect(deviceCodes(store).get('h1')?.status).toBe('denied');
    expect(deviceCodes(store).findByKey('AAAABBBB')).toEqual({
      id: 'h1',
      state: 'fresh',
      record: { ...device('AAAABBBB'), status: 'denied' },
    });
  });

  it('frees the old user code of a device code saved again under another, and writes neither when full', () => {
    const clock = { t: 1_000 };
    const store = new MemoryRecordStore({ maxEntries: 2, now: () => clock.t });
    deviceCodes(store).save('h1', device('AAAABBBB'), 60_000);
    deviceCodes(store).save('h1', device('CCCCDDDD'), 60_000);
    expect(deviceCodes(store).findByKey('AAAABBBB')).toBeUndefined();
    deviceCodes(store).save('h2', device('FFFFGGGG'), 60_000);
    const err = refusal(() => deviceCodes(store).save('h3', device('HHHHJJJJ'), 60_000));
    expect(err).toMatchObject({
      status: 503,
      code: 'ERR_STORE_FULL',
      message: 'The server holds as many pending credentials as it can; try again later.',
    });
    expect(deviceCodes(store).get('h3')).toBeUndefined();
    expect(deviceCodes(store).findByKey('HHHHJJJJ')).toBeUndefined();
    expect(deviceCodes(store).get('h1')?.userCode).toBe('CCCCDDDD');
    expect(deviceCodes(store).findByKey('FFFFGGGG')?.id).toBe('h2');
  });

  it('finds nothing under a user code whose device code was consumed', () => {
    const store = new MemoryRecordStore();
    deviceCodes(store).save('h1', device('AAAABBBB'), 60_000);
    deviceCodes(store).save('h1', device('CCCCDDDD'), 60_000);
    expect(deviceCodes(store).destroy('h1')).toBe(true);
    // AAAABBBB still points at h1 in the index, but h1 is gone
    expect(deviceCodes(store).findByKey('AAAABBBB')).toBeUndefined();
    expect(deviceCodes(store).findByKey('CCCCDDDD')).toBeUndefined();
    expect(deviceCodes(store).findByKey('ZZZZZZZZ')).toBeUndefined();
  });
});

describe('MemoryRecordStore: consents', () => {
  it("gives a user's place back when their last consent is deleted", () => {
    const clock = { t: 1_000 };
    const store = new MemoryRecordStore({ maxEntries: 1, now: () => clock.t });
    const grant = (sub: string) => ({
      id: `grant-${sub}`,
      sub,
      clientId: 'web',
      scope: ['openid'],
      createdAt: clock.t,
    });
    consents(store).save(grant('alice'), 60_000);
    expect(consents(store).delete('alice', 'grant-alice')).toEqual(grant('alice'));
    expect(consents(store).delete('alice', 'grant-alice')).toBeUndefined();
    expect(consents(store).list('alice')).toEqual([]);
    // alice holds no place any more: bob's consent fits
    consents(store).save(grant('bob'), 60_000);
    expect(consents(store).get('bob', 'web')).toEqual(grant('bob'));
  });

  it("keeps a user's other consents when one of them is deleted", () => {
    const store = new MemoryRecordStore();
    const grant = (clientId: string, createdAt: number) => ({
      id: `grant-${clientId}`,
      sub: 'alice',
      clientId,
      scope: ['openid'],
      createdAt,
    });
    consents(store).save(grant('web', 1), 60_000);
    consents(store).save(grant('tv', 2), 60_000);
    expect(consents(store).delete('alice', 'grant-web')).toEqual(grant('web', 1));
    expect(consents(store).list('alice')).toEqual([grant('tv', 2)]);
    expect(consents(store).get('alice', 'tv')).toEqual(grant('tv', 2));
  });
});
