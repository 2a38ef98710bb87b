// A grant added from outside, with portico/oauth's public surface alone (src/oauth/index.ts),
// driven over a real server by openid-client's generic grant request, as a client of a
// made-up extension grant (RFC 6749 §4.5) would.
import { randomUUID } from 'node:crypto';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assertCanIssue,
  DEVICE_CODE_GRANT,
  defaultGrants,
  defineClient,
  defineGrant,
  type Grant,
  grantUser,
  issueUserTokens,
  OAuthError,
  requiredParameter,
} from '../../../src/oauth/index.js';
import { closeAll, request } from '../../helpers/http.js';
import { type RunningAuth, startAuth } from './fixtures.js';

const MAGIC_LINK = 'urn:example:grant-type:magic-link';

/** The app's one-time sign-in links: link → user. */
const links = new Map<string, string>();
/** The parameters the grant saw, request by request. */
const seen: string[][] = [];

/** A user signs in with a link mailed to them: one use, then it is gone. */
const magicLink: Grant = defineGrant({
  type: MAGIC_LINK,
  parameters: ['link', 'scope'],
  async handle(ctx, oauthClient, params, binding) {
    seen.push([...params.keys()]);
    const sub = links.get(requiredParameter(params, 'link'));
    if (sub === undefined) throw new OAuthError('invalid_grant', 'The link is unknown or used.');
    const user = await grantUser(ctx, sub);
    const requested = params.get('scope')?.split(' ') ?? ['openid'];
    if (requested.some((s) => !oauthClient.scopes.includes(s))) {
      throw new OAuthError('invalid_scope', 'A requested scope is not allowed for this client.');
    }
    await assertCanIssue(ctx, binding);
    links.delete(requiredParameter(params, 'link'));
    const family = { scope: requested, expiresAt: Date.now() + ctx.settings.refreshTokenTtl };
    return issueUserTokens(
      ctx,
      oauthClient,
      { user, scope: requested, grantId: randomUUID(), family },
      binding,
    );
  },
});

let running: RunningAuth;
let app: client.Configuration;
let other: client.Configuration;

const configFor = (url: string, clientId: string, secret: string) =>
  client.discovery(new URL(url), clientId, undefined, client.ClientSecretBasic(secret), {
    execute: [client.allowInsecureRequests],
  });

function newLink(sub = 'alice'): string {
  const link = randomUUID();
  links.set(link, sub);
  return link;
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => 'granted',
    (e: { error?: string; status?: number }) => `${e.status} ${e.error}`,
  );

beforeAll(async () => {
  const clients = await Promise.all([
    defineClient({
      clientId: 'mail-app',
      secret: 'mail-app-secret',
      grantTypes: [MAGIC_LINK, 'refresh_token'],
      redirectUris: [],
      scopes: ['openid', 'profile', 'read:mail'],
    }),
    defineClient({
      clientId: 'other-app',
      secret: 'other-app-secret',
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:mail'],
    }),
  ]);
  running = await startAuth(clients, { grants: [...defaultGrants, magicLink] });
  app = await configFor(running.url, 'mail-app', 'mail-app-secret');
  other = await configFor(running.url, 'other-app', 'other-app-secret');
});

afterAll(closeAll);

describe('a grant registered from outside (portico/oauth only)', () => {
  it('is listed in discovery beside the built-in grants', () => {
    expect(app.serverMetadata().grant_types_supported).toEqual([
      'authorization_code',
      'refresh_token',
      'client_credentials',
      DEVICE_CODE_GRANT,
      MAGIC_LINK,
    ]);
  });

  it('issues tokens through openid-client, which then refresh as any grant does', async () => {
    const tokens = await client.genericGrantRequest(app, MAGIC_LINK, {
      link: newLink('alice'),
      scope: 'openid profile read:mail',
    });
    expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'openid profile read:mail' });
    expect(tokens.claims()).toMatchObject({ sub: 'alice', aud: 'mail-app', name: 'Alice Example' });
    const introspected = await client.tokenIntrospection(app, tokens.access_token);
    expect(introspected).toMatchObject({ active: true, sub: 'alice', client_id: 'mail-app' });
    const refreshed = await client.refreshTokenGrant(app, tokens.refresh_token!);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
  });

  it("answers the grant's own refusals, and sees only the parameters it lists", async () => {
    const link = newLink('bob');
    expect(await refusal(client.genericGrantRequest(app, MAGIC_LINK, { link: 'nope' }))).toBe(
      '400 invalid_grant',
    );
    expect(await refusal(client.genericGrantRequest(app, MAGIC_LINK, {}))).toBe(
      '400 invalid_request',
    );
    expect(
      await refusal(client.genericGrantRequest(app, MAGIC_LINK, { link, scope: 'admin' })),
    ).toBe('400 invalid_scope');
    seen.length = 0;
    await client.genericGrantRequest(app, MAGIC_LINK, { link, device_code: 'x', extra: 'y' });
    expect(seen).toEqual([['grant_type', 'link']]);
    // used once
    expect(await refusal(client.genericGrantRequest(app, MAGIC_LINK, { link }))).toBe(
      '400 invalid_grant',
    );
  });

  it('is refused to a client that lacks it, and takes each parameter once (RFC 6749 §3.2)', async () => {
    expect(await refusal(client.genericGrantRequest(other, MAGIC_LINK, { link: newLink() }))).toBe(
      '400 unauthorized_client',
    );
    const link = newLink();
    const repeated = await request(running.listening, '/token', {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Authorization: `Basic ${Buffer.from('mail-app:mail-app-secret').toString('base64')}`,
      },
      body: `grant_type=${encodeURIComponent(MAGIC_LINK)}&link=${link}&link=${link}`,
    });
    expect(repeated.status).toBe(400);
    expect(JSON.parse(repeated.body)).toMatchObject({ error: 'invalid_request' });
    expect(links.has(link)).toBe(true);
  });

  it('is unsupported on a server that does not register it, as is a grant taken away', async () => {
    const clients = await Promise.all([
      defineClient({
        clientId: 'mail-app',
        secret: 'mail-app-secret',
        grantTypes: [MAGIC_LINK, 'client_credentials'],
        redirectUris: [],
        scopes: ['read:mail'],
      }),
    ]);
    const warnings: unknown[] = [];
    const logger = {
      error: () => {},
      warn: (fields: unknown) => warnings.push(fields),
      info: () => {},
      debug: () => {},
      child: () => logger,
    };
    const bare = await startAuth(clients, {
      grants: defaultGrants.filter((grant) => grant.type !== 'client_credentials'),
      logger,
    });
    const config = await configFor(bare.url, 'mail-app', 'mail-app-secret');
    expect(config.serverMetadata().grant_types_supported).toEqual([
      'authorization_code',
      'refresh_token',
      DEVICE_CODE_GRANT,
    ]);
    for (let i = 0; i < 2; i++) {
      expect(
        await refusal(client.genericGrantRequest(config, MAGIC_LINK, { link: newLink() })),
      ).toBe('400 unsupported_grant_type');
    }
    expect(await refusal(client.clientCredentialsGrant(config))).toBe('400 unsupported_grant_type');
    // the client names grants the server does not answer: told once per client and type
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatchObject({
      event: 'token.unregistered_grant',
      clientId: 'mail-app',
      grantType: MAGIC_LINK,
    });
  });
});
