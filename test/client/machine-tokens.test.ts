// clientCredentials(): one token request for 50 concurrent callers, the cache until shortly
// before expiry, backing off while the provider fails (an unexpired token still served), and
// the undici interceptor adding the token (and a DPoP proof that portico's own verifier
// accepts) to outgoing requests; against a stand-in provider and portico's own server.
import { exportJWK, generateKeyPair, jwtVerify } from 'jose';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDpopVerifier } from '../../src/auth/dpop/dpop.ts';
import { clientCredentials } from '../../src/client/machine-tokens.ts';
import { upstreamProvider } from '../../src/client/provider.ts';
import { closeAll, type Listening, listen } from '../helpers/http.ts';
import { type StandIn, startStandIn } from '../helpers/stand-in-provider.ts';

let stand: StandIn;
let echo: Listening;
const seen: Record<string, string | undefined>[] = [];

beforeAll(async () => {
  stand = await startStandIn('oidc');
  echo = await listen((req, res) => {
    seen.push({ authorization: req.headers.authorization, dpop: req.headers.dpop as string });
    res.end('ok');
  });
});
afterAll(async () => {
  await closeAll();
  await stand.close();
});

const provider = () =>
  upstreamProvider({
    name: 'machines',
    issuer: stand.url,
    clientId: 'billing',
    clientSecret: 'billing-secret',
    clientAuth: 'client_secret_post',
  });

describe('clientCredentials()', () => {
  it('asks once for 50 concurrent callers, with scope and resource, then serves the cache', async () => {
    stand.delay = 50;
    const before = stand.tokenRequests.length;
    const tokens = clientCredentials({
      provider: provider(),
      scope: 'invoices:read',
      resource: ['https://api.example.test'],
    });
    const all = await Promise.all(Array.from({ length: 50 }, () => tokens.token()));
    expect(new Set(all).size).toBe(1);
    expect(stand.tokenRequests.length - before).toBe(1);
    const asked = stand.tokenRequests.at(-1)!.body;
    expect(Object.fromEntries(asked)).toMatchObject({
      grant_type: 'client_credentials',
      scope: 'invoices:read',
      resource: 'https://api.example.test',
      client_id: 'billing',
      client_secret: 'billing-secret',
    });
    expect(await tokens.token()).toBe(all[0]);
    expect(stand.tokenRequests.length - before).toBe(1);
    tokens.reset();
    expect(await tokens.token()).not.toBe(all[0]);
    stand.delay = 0;
  });

  it('replaces a token refreshBefore its expiry, and not sooner', async () => {
    let t = 1_000_000;
    stand.expiresIn = 60;
    const tokens = clientCredentials({ provider: provider(), refreshBefore: 10_000, now: () => t });
    const first = await tokens.token();
    t += 49_999;
    expect(await tokens.token()).toBe(first);
    t += 2;
    expect(await tokens.token()).not.toBe(first);
    stand.expiresIn = 300;
  });

  it('backs off while the provider fails, serving an unexpired token meanwhile', async () => {
    let t = 5_000_000;
    stand.expiresIn = 60;
    const tokens = clientCredentials({
      provider: provider(),
      refreshBefore: 30_000,
      minBackoff: 1_000,
      now: () => t,
    });
    const first = await tokens.token();
    stand.answer = 'server-error';
    const count = () => stand.tokenRequests.length;
    t += 31_000; // in the refresh window: the refresh fails, the token is still good
    expect(await tokens.token()).toBe(first);
    const afterFailure = count();
    expect(await tokens.token()).toBe(first); // within the back-off: not asked again
    expect(count()).toBe(afterFailure);
    t += 30_000; // expired, and past the first back-off
    await expect(tokens.token()).rejects.toMatchObject({ code: 'ERR_TOKEN_UNAVAILABLE' });
    expect(count()).toBe(afterFailure + 1);
    await expect(tokens.token()).rejects.toMatchObject({ code: 'ERR_TOKEN_UNAVAILABLE' });
    expect(count()).toBe(afterFailure + 1); // the second back-off (2 s) runs
    stand.answer = 'good';
    t += 2_000;
    expect(await tokens.token()).not.toBe(first);
    stand.expiresIn = 300;
  });

  it('adds the token to requests through an undici interceptor', async () => {
    const tokens = clientCredentials({ provider: provider() });
    const agent = new Agent().compose(tokens.interceptor());
    const reply = await undiciFetch(`${echo.url}/invoices?x=1`, {
      dispatcher: agent,
      headers: { authorization: 'Bearer stale', accept: 'text/plain' },
    });
    expect(await reply.text()).toBe('ok');
    expect(seen.at(-1)!.authorization).toBe(`Bearer ${await tokens.token()}`);
    await agent.close();
  });

  it('binds tokens with DPoP: proofs at the token endpoint and on each request', async () => {
    const tokens = clientCredentials({ provider: provider(), dpop: true });
    const agent = new Agent().compose(tokens.interceptor());
    await (
      await undiciFetch(`${echo.url}/invoices?page=2`, { dispatcher: agent, method: 'POST' })
    ).text();
    expect(stand.tokenRequests.at(-1)!.dpop).toMatch(/^eyJ/);
    const { authorization, dpop } = seen.at(-1)!;
    expect(authorization).toMatch(/^DPoP cc-\d+$/);
    const accessToken = authorization!.slice('DPoP '.length);
    const verified = await createDpopVerifier().verify(dpop, {
      method: 'POST',
      url: `${echo.url}/invoices?page=2`,
      accessToken,
    });
    expect(verified.jkt).toMatch(/^[\w-]{43}$/);
    await agent.close();
  });

  it('authenticates with private_key_jwt: an assertion signed by the client key', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(privateKey)), alg: 'ES256', kid: 'billing-1' };
    const tokens = clientCredentials({
      provider: upstreamProvider({
        name: 'keyed',
        issuer: stand.url,
        clientId: 'billing',
        privateKey: jwk as never,
      }),
    });
    await tokens.token();
    const body = stand.tokenRequests.at(-1)!.body;
    expect(body.get('client_assertion_type')).toBe(
      'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    );
    const { payload, protectedHeader } = await jwtVerify(body.get('client_assertion')!, publicKey);
    expect(protectedHeader).toMatchObject({ alg: 'ES256', kid: 'billing-1' });
    expect(payload).toMatchObject({ iss: 'billing', sub: 'billing' });
    expect([payload.aud].flat()).toContain(stand.url);
    expect(body.has('client_secret')).toBe(false);
  });

  it('refuses options it cannot use', () => {
    expect(() => clientCredentials({ provider: {} as never })).toThrow(
      'clientCredentials(): `provider` must come from upstreamProvider()',
    );
    expect(() => clientCredentials({ provider: provider(), resource: 'not a uri' })).toThrow(
      /`resource` must be an absolute URI/,
    );
    expect(() => clientCredentials({ provider: provider(), scop: 'x' } as never)).toThrow(
      /unknown option `scop`/,
    );
  });
});
