// The device authorization grant (RFC 8628) at the edges the main suites leave out: the
// factories' option checks (run inside each test, so that the code under test is the test's
// own), user code collisions, failures of the store, and every page of /device/verify.
import { afterAll, describe, expect, it } from 'vitest';
import { createSessions } from '../../../src/auth/session/session.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { defineClient, type OAuthClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { createOAuthContext } from '../../../src/oauth/context.js';
import {
  createDeviceAuthorizationEndpoint,
  createDeviceVerificationEndpoint,
  type DeviceAuthorizationOptions,
  type DeviceVerificationOptions,
  formatUserCode,
} from '../../../src/oauth/endpoints/device-authorization.js';
import { deviceCodes } from '../../../src/oauth/store/records.js';
import { MemoryRecordStore } from '../../../src/oauth/store/store.js';
import { hashToken } from '../../../src/oauth/tokens/issue.js';
import { createKeySet } from '../../../src/oauth/tokens/key-set.js';
import { hiddenInputs, sessionCookie } from '../../helpers/browser.js';
import { closeAll, json, type Listening, type Reply, request, serve } from '../../helpers/http.js';
import { captureLogger } from '../../helpers/logger.js';

afterAll(closeAll);

const ISSUER = 'https://auth.example.test';
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const KEYS = createKeySet();

/** A client store whose clients can be made to disappear (deleted after a code was issued). */
class VanishingClients extends MemoryClientStore {
  readonly gone = new Set<string>();
  override get(clientId: string): OAuthClient | undefined {
    return this.gone.has(clientId) ? undefined : super.get(clientId);
  }
}

interface DeviceSetup {
  server: Listening;
  store: MemoryRecordStore;
  clients: VanishingClients;
}

interface SetupOptions {
  issuer?: string;
  store?: MemoryRecordStore;
  authorization?: DeviceAuthorizationOptions;
  verification?: DeviceVerificationOptions;
  logger?: ReturnType<typeof captureLogger>;
}

/** Both device endpoints over a real socket, built by the calling test. */
async function startDevice(options: SetupOptions = {}): Promise<DeviceSetup> {
  const clients = new VanishingClients([
    await defineClient({
      clientId: 'tv',
      name: 'Living-room TV',
      grantTypes: [DEVICE_GRANT],
      redirectUris: [],
      scopes: ['openid', 'read:messages'],
    }),
    await defineClient({
      clientId: 'web',
      secret: 'web-secret-1234',
      grantTypes: ['authorization_code'],
      redirectUris: ['https://app.example.com/cb'],
      scopes: ['openid'],
    }),
  ]);
  const store = options.store ?? new MemoryRecordStore();
  const ctx = createOAuthContext({
    issuer: options.issuer ?? ISSUER,
    clients,
    keys: await KEYS,
    store,
    users: {
      verify: (username, password) =>
        password === `${username}-password`
          ? { sub: username, name: `${username} example` }
          : undefined,
      get: (sub) => ({ sub }),
    },
    sessions: createSessions({ allowedOrigins: [ISSUER], cookie: { secure: false } }),
  });
  const server = await serve(
    createRouter({
      '/device': createDeviceAuthorizationEndpoint(ctx, options.authorization),
      '/device/verify': createDeviceVerificationEndpoint(ctx, options.verification),
    }),
    { logger: options.logger ?? captureLogger() },
  );
  return { server, store, clients };
}

const startCode = (server: Listening, body = 'client_id=tv&scope=read:messages') =>
  request(server, '/device', { method: 'POST', headers: FORM, body });

async function issueCode(server: Listening): Promise<{ deviceCode: string; userCode: string }> {
  const body = json(await startCode(server));
  return { deviceCode: body.device_code as string, userCode: body.user_code as string };
}

const post = (server: Listening, fields: readonly [string, string][], cookie?: string) =>
  request(server, '/device/verify', {
    method: 'POST',
    headers: { ...FORM, ...(cookie === undefined ? {} : { Cookie: cookie }) },
    body: new URLSearchParams(fields).toString(),
  });

/** Signs `user` in at the page: the code form shown then and the session cookie. */
async function signIn(server: Listening, user = 'alice', query = '') {
  const first = await request(server, `/device/verify${query}`);
  const page = await post(server, [
    ...hiddenInputs(first.body),
    ['username', user],
    ['password', `${user}-password`],
  ]);
  expect(page.status).toBe(200);
  return { page, cookie: sessionCookie(page.headers)! };
}

/** The error an endpoint factory throws for `build`, or `undefined`. */
function refusal(build: () => unknown): unknown {
  try {
    build();
    return undefined;
  } catch (err) {
    return err;
  }
}

function expectOptionError(err: unknown, message: string): void {
  expect(err).toBeInstanceOf(TypeError);
  expect(err).toMatchObject({ code: 'ERR_INVALID_OPTION', message });
}

/** A store in which the first `taken` user codes looked up belong to another device already. */
class CollidingStore extends MemoryRecordStore {
  readonly lookups: string[] = [];
  constructor(readonly taken: number) {
    super();
  }
  override findByKey(kind: string, userCode: string): ReturnType<MemoryRecordStore['findByKey']> {
    if (kind !== deviceCodes.kind) return super.findByKey(kind, userCode);
    this.lookups.push(userCode);
    if (this.lookups.length > this.taken) return super.findByKey(kind, userCode);
    return {
      id: 'another-device',
      state: 'fresh',
      record: {
        clientId: 'tv',
        scope: [],
        userCode,
        status: 'pending',
        interval: 5_000,
        grantId: 'g',
        expiresAt: Date.now() + 60_000,
      },
    };
  }
}

describe('device.ts', () => {
  const owner = 'createDeviceAuthorizationEndpoint()';

  it('defaults verification_uri to <issuer>/device/verify, one slash whatever the issuer ends with', async () => {
    for (const [issuer, expected] of [
      [ISSUER, `${ISSUER}/device/verify`],
      ['https://auth.example.test/tenant/', 'https://auth.example.test/tenant/device/verify'],
    ] as const) {
      const { server } = await startDevice({ issuer });
      const body = json(await startCode(server));
      expect(body.verification_uri).toBe(expected);
      expect(body.verification_uri_complete).toBe(`${expected}?user_code=${body.user_code}`);
    }
  });

  it('takes an http(s) verificationUri, its query kept in verification_uri_complete', async () => {
    const verificationUri = 'http://tv.example.test/activate?lang=en';
    const { server } = await startDevice({ authorization: { verificationUri } });
    const body = json(await startCode(server));
    expect(body.verification_uri).toBe(verificationUri);
    expect(body.verification_uri_complete).toBe(`${verificationUri}&user_code=${body.user_code}`);
  });

  it('refuses a verificationUri that is not absolute, not http(s), or has a fragment', async () => {
    const ctx = createOAuthContext({
      issuer: ISSUER,
      clients: new MemoryClientStore(),
      keys: await KEYS,
      store: new MemoryRecordStore(),
      users: { verify: () => undefined, get: () => undefined },
      sessions: createSessions({ allowedOrigins: [ISSUER], cookie: { secure: false } }),
    });
    const build = (verificationUri: string) => () =>
      createDeviceAuthorizationEndpoint(ctx, { verificationUri });
    for (const relative of ['/device/verify', 'not a url']) {
      expectOptionError(
        refusal(build(relative)),
        `${owner}: \`verificationUri\` must be an absolute URL`,
      );
    }
    for (const wrong of [
      'ftp://auth.example.test/device',
      'xhttp://auth.example.test/device',
      'https://auth.example.test/device#code',
      // an empty fragment (`URL#hash` is '' for it) is a fragment all the same
      'https://auth.example.test/device#',
    ]) {
      expectOptionError(
        refusal(build(wrong)),
        `${owner}: \`verificationUri\` must be an http(s) URL without a fragment`,
      );
    }
    expect(refusal(build('https://auth.example.test/device?x=1'))).toBeUndefined();
  });

  it('names the device grant when a client without it asks for a code', async () => {
    const { server } = await startDevice();
    const reply = await startCode(server, 'client_id=web&client_secret=web-secret-1234');
    expect(reply.status).toBe(400);
    expect(json(reply)).toEqual({
      error: 'unauthorized_client',
      error_description: 'This client may not use the device grant.',
    });
  });

  it('draws another user code while the one drawn belongs to a pending device', async () => {
    const store = new CollidingStore(2);
    const { server } = await startDevice({ store });
    const reply = await startCode(server);
    expect(reply.status).toBe(200);
    const body = json(reply);
    expect(store.lookups).toHaveLength(3);
    expect(body.user_code).toBe(formatUserCode(store.lookups[2]!));
    expect(new Set(store.lookups).size).toBe(3);
    expect(deviceCodes(store).get(hashToken(body.device_code as string))?.userCode).toBe(
      store.lookups[2],
    );
  });

  it('gives up after 5 taken user codes with temporarily_unavailable', async () => {
    const store = new CollidingStore(50);
    const { server } = await startDevice({ store });
    const reply = await startCode(server);
    expect(reply.status).toBe(503);
    expect(json(reply)).toEqual({
      error: 'temporarily_unavailable',
      error_description: 'Try again.',
    });
    expect(store.lookups).toHaveLength(5);
  });

  it('leaves a failure of the store that is no OAuth error to the adapter, which logs it', async () => {
    const store = new MemoryRecordStore();
    const failure = new Error('disk on fire');
    store.save = () => {
      throw failure;
    };
    const logger = captureLogger();
    const { server } = await startDevice({ store, logger });
    const reply = await startCode(server);
    expect(reply.status).toBe(500);
    expect(reply.headers['content-type']).not.toBe('application/json');
    expect(reply.body).not.toContain('disk on fire');
    expect(logger.errors).toEqual([failure]);
  });

  it('answers a full store with temporarily_unavailable in the OAuth format', async () => {
    const { server } = await startDevice({ store: new MemoryRecordStore({ maxEntries: 1 }) });
    expect((await startCode(server)).status).toBe(200);
    const full = await startCode(server);
    expect(full.status).toBe(503);
    expect(full.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    expect(full.headers['content-type']).toBe('application/json');
    expect(json(full).error).toBe('temporarily_unavailable');
  });
});

describe('device-verify.ts', () => {
  const owner = 'createDeviceVerificationEndpoint()';

  it('checks failureStore, maxFailures and failureWindow when built', async () => {
    const ctx = createOAuthContext({
      issuer: ISSUER,
      clients: new MemoryClientStore(),
      keys: await KEYS,
      store: new MemoryRecordStore(),
      users: { verify: () => undefined, get: () => undefined },
      sessions: createSessions({ allowedOrigins: [ISSUER], cookie: { secure: false } }),
    });
    const build = (options: DeviceVerificationOptions) => () =>
      createDeviceVerificationEndpoint(ctx, options);
    expectOptionError(
      refusal(build({ failureStore: {} as never })),
      `${owner}: \`failureStore\` must be a RateLimitStore (increment)`,
    );
    expectOptionError(
      refusal(build({ maxFailures: 0 })),
      `${owner}: \`maxFailures\` must be an integer, at least 1`,
    );
    expectOptionError(
      refusal(build({ failureWindow: 999 })),
      `${owner}: \`failureWindow\` must be milliseconds, at least 1000`,
    );
    expect(refusal(build({ failureWindow: 1_000, maxFailures: 1 }))).toBeUndefined();
  });

  it('carries a code of up to 32 characters from the URL into the sign-in form, not a longer one', async () => {
    const { server } = await startDevice();
    const codeField = (reply: Reply) => hiddenInputs(reply.body).find(([n]) => n === 'user_code');
    const fits = 'B'.repeat(32);
    const page = await request(server, `/device/verify?user_code=${fits}`);
    expect(page.status).toBe(200);
    expect(codeField(page)).toEqual(['user_code', fits]);
    const tooLong = await request(server, `/device/verify?user_code=${'B'.repeat(33)}`);
    expect(tooLong.status).toBe(200);
    expect(tooLong.body).toContain('name="password"');
    expect(codeField(tooLong)).toBeUndefined();
  });

  it('answers a body it cannot read with the error page and the status of the refusal', async () => {
    const { server } = await startDevice();
    const reply = await request(server, '/device/verify', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"decision":"approve"}',
    });
    expect(reply.status).toBe(415);
    expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(reply.body).toContain('This request cannot be completed');
  });

  it('refuses a form that is both a sign-in and a decision, or neither', async () => {
    const { server } = await startDevice();
    for (const fields of [
      [
        ['username', 'alice'],
        ['password', 'alice-password'],
        ['decision', 'approve'],
      ],
      [['user_code', 'WDJB-MJHT']],
    ] as [string, string][][]) {
      const reply = await post(server, fields);
      expect(reply.status).toBe(400);
      expect(reply.body).toContain('The form is not one of ours.');
      expect(sessionCookie(reply.headers)).toBeUndefined();
    }
  });

  it('refuses a sign-in posted without the form token of its page', async () => {
    const { server } = await startDevice();
    const reply = await post(server, [
      ['username', 'alice'],
      ['password', 'alice-password'],
    ]);
    expect(reply.status).toBe(400);
    expect(reply.body).toContain('This form has expired or was changed. Open the page again.');
    expect(reply.body).toContain('This request cannot be completed');
    expect(sessionCookie(reply.headers)).toBeUndefined();
  });

  it('answers a decision after the session ended with the sign-in form, the code kept, and a challenge', async () => {
    const { server } = await startDevice();
    const reply = await post(server, [
      ['user_code', 'WDJB-MJHT'],
      ['decision', 'approve'],
    ]);
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toMatch(/^Cookie /);
    expect(reply.body).toContain('Your session has ended. Sign in again.');
    expect(hiddenInputs(reply.body)).toContainEqual(['user_code', 'WDJB-MJHT']);
    // the first sign-in form is no challenge
    const first = await request(server, '/device/verify');
    expect(first.status).toBe(200);
    expect(first.headers['www-authenticate']).toBeUndefined();
  });

  it('refuses a decision other than approve or deny', async () => {
    const { server, store } = await startDevice();
    const { deviceCode, userCode } = await issueCode(server);
    const { page, cookie } = await signIn(server, 'alice', `?user_code=${userCode}`);
    const reply = await post(
      server,
      [...hiddenInputs(page.body), ['user_code', userCode], ['decision', 'maybe']],
      cookie,
    );
    expect(reply.status).toBe(400);
    expect(reply.body).toContain('Choose Allow or Deny.');
    expect(deviceCodes(store).get(hashToken(deviceCode))?.status).toBe('pending');
  });
});

describe('device-verify-pages.ts', () => {
  it('names the signed-in user and binds the form to the code it shows', async () => {
    const { server } = await startDevice();
    const { userCode } = await issueCode(server);
    const { page } = await signIn(server, 'alice', `?user_code=${userCode}`);
    expect(page.body).toContain('alice example');
    expect(page.body).toContain('Living-room TV');
    expect(page.body).toMatch(/<input type="hidden" name="shown_user_code" value="[A-Z]{8}">/);
    expect(hiddenInputs(page.body)).toContainEqual(['shown_user_code', userCode.replace('-', '')]);
  });

  it('says a typed code is not valid in so many words', async () => {
    const { server } = await startDevice();
    const { page } = await signIn(server, 'alice', '?user_code=BBBB-BBBB');
    expect(page.body).toContain(
      'That code is not valid or has expired. Check the code your device shows.',
    );
  });

  it('says how many minutes to wait past the budget of codes', async () => {
    const { server } = await startDevice({
      verification: { maxFailures: 1, failureWindow: 120_000 },
    });
    const { cookie } = await signIn(server);
    const reply = await request(server, '/device/verify?user_code=BBBB-BBBB', {
      headers: { Cookie: cookie },
    });
    expect(reply.status).toBe(429);
    const seconds = Number(reply.headers['retry-after']);
    expect(seconds).toBeGreaterThan(100);
    expect(seconds).toBeLessThanOrEqual(120);
    expect(reply.body).toContain('Too many attempts');
    expect(reply.body).toContain(
      `Too many codes tried. Wait ${Math.ceil(seconds / 60)} minute(s) and try again.`,
    );
  });

  it('shows the client id of a device whose client was deleted, and still records the decision', async () => {
    const { server, store, clients } = await startDevice();
    const { deviceCode, userCode } = await issueCode(server);
    const { cookie } = await signIn(server);
    clients.gone.add('tv');
    const page = await request(server, `/device/verify?user_code=${userCode}`, {
      headers: { Cookie: cookie },
    });
    expect(page.status).toBe(200);
    expect(page.body).not.toContain('Living-room TV');
    expect(page.body).toContain('<strong>tv</strong> asks to:');
    const done = await post(
      server,
      [...hiddenInputs(page.body), ['user_code', userCode], ['decision', 'deny']],
      cookie,
    );
    expect(done.status).toBe(200);
    expect(done.body).toContain('Device refused');
    expect(done.body).toContain('tv was not given access.');
    expect(deviceCodes(store).get(hashToken(deviceCode))?.status).toBe('denied');
  });

  it('records the time of the sign-in in seconds as the approval authTime', async () => {
    const { server, store } = await startDevice();
    const { deviceCode, userCode } = await issueCode(server);
    const before = Math.floor(Date.now() / 1000);
    const { page, cookie } = await signIn(server, 'alice', `?user_code=${userCode}`);
    const after = Math.ceil(Date.now() / 1000);
    const done = await post(
      server,
      [...hiddenInputs(page.body), ['user_code', userCode], ['decision', 'approve']],
      cookie,
    );
    expect(done.body).toContain('Device connected');
    const record = deviceCodes(store).get(hashToken(deviceCode));
    expect(record).toMatchObject({ status: 'approved', sub: 'alice' });
    expect(record?.authTime).toBeGreaterThanOrEqual(before);
    expect(record?.authTime).toBeLessThanOrEqual(after);
  });
});
