// jwtBearer({ issuers }): two issuers, each served by its own JWKS server on 127.0.0.1; a
// token is verified by the issuer its `iss` names, and a token of any other issuer is refused
// before anything is fetched. Also the claim rules (`audienceClaim`, `claims`) and mappings
// (`scopesClaim`, `rolesClaim`) each issuer may have.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate, requireRole } from '../../../src/auth/authenticate.ts';
import { type JwtBearerIssuersOptions, jwtBearer } from '../../../src/auth/jwt/bearer.ts';
import { principalFromClaims } from '../../../src/auth/jwt/principal.ts';
import { compose, type Middleware } from '../../../src/core/compose.ts';
import { getPrincipal } from '../../../src/core/principal.ts';
import { sendJson } from '../../../src/core/send.ts';
import { closeAll, json, type Listening, request, serve } from '../../helpers/http.ts';
import { type KeyServer, makeKey, mint, startKeyServer, type TestKey } from './jwt-fixtures.ts';

const me: Middleware = (req, res) =>
  sendJson(res, 200, { ...getPrincipal(req), claims: undefined });
const auth = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
const CHALLENGE =
  'Bearer realm="api", error="invalid_token", error_description="The access token is not valid."';

let a: { key: TestKey; server: KeyServer; issuer: string };
let b: { key: TestKey; server: KeyServer; issuer: string };
let stranger: TestKey;

async function issuer(kid: string) {
  const key = await makeKey(kid);
  const server = await startKeyServer([key.jwk]);
  return { key, server, issuer: server.url };
}

const twoIssuers = (extra: Partial<JwtBearerIssuersOptions> = {}): JwtBearerIssuersOptions => ({
  issuers: [
    { issuer: a.issuer, audience: 'https://api.a.test', jwksUrl: a.server.jwksUrl },
    {
      issuer: b.issuer,
      audience: 'https://api.b.test',
      // discovery: the issuer's metadata names its JWKS
      rolesClaim: ['realm_access', 'roles'],
      claims: { typ: 'Bearer' },
    },
  ],
  ...extra,
});

beforeAll(async () => {
  a = await issuer('a1');
  b = await issuer('b1');
  stranger = await makeKey('s1');
});
afterAll(async () => {
  await closeAll();
  await a.server.close();
  await b.server.close();
});

const hits = () => a.server.hits + b.server.hits + a.server.discoveryHits + b.server.discoveryHits;

describe('jwtBearer({ issuers }): two issuers', () => {
  let app: Listening;
  beforeAll(async () => {
    app = await serve([authenticate([jwtBearer(twoIssuers())]), me]);
  });

  it('accepts a token of each issuer, mapped as that issuer says', async () => {
    const ofA = await mint(a.key, { iss: a.issuer, aud: 'https://api.a.test', scope: 'read:a' });
    const ofB = await mint(b.key, {
      iss: b.issuer,
      aud: 'https://api.b.test',
      sub: 'bob',
      typ: 'Bearer',
      scope: 'openid profile',
      realm_access: { roles: ['admin', 'user'] },
    });
    const first = await request(app, '/', auth(ofA));
    expect(first.status, first.body).toBe(200);
    expect(json(first)).toMatchObject({ sub: 'alice', scopes: ['read:a'], method: 'bearer' });
    expect(json(first)).not.toHaveProperty('roles');
    const second = await request(app, '/', auth(ofB));
    expect(second.status, second.body).toBe(200);
    expect(json(second)).toMatchObject({
      sub: 'bob',
      scopes: ['openid', 'profile'],
      roles: ['admin', 'user'],
    });
    expect(a.server.hits).toBe(1);
    expect(b.server.discoveryHits).toBe(1);
    expect(b.server.hits).toBe(1);
  });

  it('refuses a token of an issuer not listed without fetching anything', async () => {
    const before = hits();
    for (const iss of ['https://evil.example', `${a.issuer}/`, a.issuer.toUpperCase(), '']) {
      const token = await mint(stranger, { iss, aud: 'https://api.a.test' });
      const reply = await request(app, '/', auth(token));
      expect(reply.status, iss).toBe(401);
      expect(reply.headers['www-authenticate']).toBe(CHALLENGE);
    }
    const noIss = await mint(stranger, { iss: undefined, aud: 'https://api.a.test' });
    const numericIss = await mint(stranger, { iss: 42, aud: 'https://api.a.test' });
    for (const token of [noIss, numericIss, 'a.b.c']) {
      expect((await request(app, '/', auth(token))).status).toBe(401);
    }
    expect(hits()).toBe(before);
  });

  it("refuses a token naming issuer A but signed with B's key", async () => {
    const forged = await mint(b.key, { iss: a.issuer, aud: 'https://api.a.test' }, { kid: 'a1' });
    const unknownKid = await mint(b.key, { iss: a.issuer, aud: 'https://api.a.test' });
    expect((await request(app, '/', auth(forged))).status).toBe(401);
    expect((await request(app, '/', auth(unknownKid))).status).toBe(401);
  });

  it("enforces each issuer's own audience and claim rules", async () => {
    const aForB = await mint(a.key, { iss: a.issuer, aud: 'https://api.b.test' });
    const bForA = await mint(b.key, { iss: b.issuer, aud: 'https://api.a.test', typ: 'Bearer' });
    const bIdToken = await mint(b.key, { iss: b.issuer, aud: 'https://api.b.test', typ: 'ID' });
    for (const token of [aForB, bForA, bIdToken]) {
      const reply = await request(app, '/', auth(token));
      expect(reply.status).toBe(401);
      expect(reply.headers['www-authenticate']).toBe(CHALLENGE);
    }
  });

  it('tells an expired token apart, as for one issuer', async () => {
    const expired = await mint(a.key, {
      iss: a.issuer,
      aud: 'https://api.a.test',
      exp: 1000,
      iat: 900,
    });
    const reply = await request(app, '/', auth(expired));
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toContain('The access token expired.');
  });
});

describe('jwtBearer({ issuers }): mappings and shared options', () => {
  it("uses an issuer's own toPrincipal, else the shared one", async () => {
    const options = twoIssuers({
      toPrincipal: (p) => ({ sub: `shared:${p.sub}`, scopes: [], method: 'bearer' }),
    });
    const list = [...options.issuers];
    list[0] = {
      ...list[0]!,
      toPrincipal: (p) => ({ sub: `own:${p.sub}`, scopes: [], method: 'bearer' }),
    };
    list[1] = { issuer: b.issuer, audience: 'https://api.b.test', jwksUrl: b.server.jwksUrl };
    const app = await serve([authenticate([jwtBearer({ ...options, issuers: list })]), me]);
    const ofA = await mint(a.key, { iss: a.issuer, aud: 'https://api.a.test' });
    const ofB = await mint(b.key, { iss: b.issuer, aud: 'https://api.b.test' });
    expect(json(await request(app, '/', auth(ofA)))).toMatchObject({ sub: 'own:alice' });
    expect(json(await request(app, '/', auth(ofB)))).toMatchObject({ sub: 'shared:alice' });
  });

  it('lets requireRole accept any of the roles read from the token', async () => {
    const app = await serve([
      authenticate([jwtBearer(twoIssuers())]),
      compose([requireRole(['admin']), me]),
    ]);
    const admin = await mint(b.key, {
      iss: b.issuer,
      aud: 'https://api.b.test',
      typ: 'Bearer',
      realm_access: { roles: ['user', 'admin'] },
    });
    const user = await mint(b.key, {
      iss: b.issuer,
      aud: 'https://api.b.test',
      typ: 'Bearer',
      realm_access: { roles: ['user'] },
    });
    expect((await request(app, '/', auth(admin))).status).toBe(200);
    expect((await request(app, '/', auth(user))).status).toBe(403);
  });

  it('refuses bad issuer lists at construction, naming the entry', () => {
    const entry = { issuer: a.issuer, audience: 'x', jwksUrl: a.server.jwksUrl };
    const cases: [unknown, RegExp][] = [
      [{ issuers: [] }, /`issuers` must be a non-empty array/],
      [{ issuers: [entry, entry] }, /issuers\[1\]: `http:\/\/127\.0\.0\.1:\d+` is listed twice/],
      [{ issuers: [entry], issuer: a.issuer }, /give `issuer` or `issuers`, not both/],
      [{ issuers: [entry], audience: 'x' }, /`audience` belongs in each entry of `issuers`/],
      [{ issuers: [entry], jwksUrl: a.server.jwksUrl }, /`jwksUrl` belongs in each entry/],
      [
        { issuers: [{ ...entry, clockTolerance: 1000 }] },
        /issuers\[0\]: `clockTolerance` is shared/,
      ],
      [{ issuers: [{ ...entry, audiense: 'x' }] }, /issuers\[0\]: unknown option `audiense`/],
      [
        { issuers: [{ ...entry, issuer: ['a', 'b'] }] },
        /issuers\[0\]: `issuer` must be one non-empty string/,
      ],
      [{ issuers: [{ ...entry, audience: undefined }] }, /issuers\[0\]: `audience` is required/],
      [
        { issuers: [{ ...entry, rolesClaim: [] }] },
        /issuers\[0\]: `rolesClaim` must be a claim name/,
      ],
      [{ issuers: [{ ...entry, rolesClaim: 'r', toPrincipal: () => undefined }] }, /not both/],
      [{ issuers: [{ ...entry, claims: { typ: [] } }] }, /`claims.typ` must be/],
      [{ issuers: [{ ...entry, audienceClaim: '' }] }, /`audienceClaim` must be a claim name/],
      ['nope', /options must be an object/],
    ];
    for (const [options, message] of cases) {
      expect(() => jwtBearer(options as JwtBearerIssuersOptions), String(message)).toThrow(message);
    }
  });
});

describe('claim rules and mappings of one issuer', () => {
  it('reads the audience from another claim (Cognito: client_id) and requires claim values', async () => {
    const bearer = jwtBearer({
      issuer: a.issuer,
      audience: 'client-1',
      audienceClaim: 'client_id',
      claims: { token_use: 'access', version: [2, 3] },
      jwksUrl: a.server.jwksUrl,
      rolesClaim: 'cognito:groups',
    });
    const app = await serve([authenticate([bearer]), me]);
    const base = { iss: a.issuer, aud: undefined, token_use: 'access', version: 2 };
    const access = await mint(a.key, {
      ...base,
      client_id: 'client-1',
      'cognito:groups': ['admin'],
    });
    const reply = await request(app, '/', auth(access));
    expect(reply.status, reply.body).toBe(200);
    expect(json(reply)).toMatchObject({ roles: ['admin'], clientId: 'client-1' });
    const refused = [
      { ...base, client_id: 'client-2' },
      { ...base, client_id: undefined, aud: 'client-1' },
      { ...base, client_id: 'client-1', token_use: 'id' },
      { ...base, client_id: 'client-1', token_use: undefined },
      { ...base, client_id: 'client-1', version: '2' },
    ];
    for (const claims of refused) {
      const token = await mint(a.key, claims);
      expect((await request(app, '/', auth(token))).status, JSON.stringify(claims)).toBe(401);
    }
  });

  it('reads scopes where scopesClaim says, and principalFromClaims takes the same mapping', async () => {
    const bearer = jwtBearer({
      issuer: a.issuer,
      audience: 'https://api.a.test',
      jwksUrl: a.server.jwksUrl,
      scopesClaim: 'permissions',
      rolesClaim: 'https://example.com/roles',
    });
    const app = await serve([authenticate([bearer]), me]);
    const claims = {
      iss: a.issuer,
      aud: 'https://api.a.test',
      scope: 'openid',
      permissions: ['read:messages', 'Messages.Read', 'bad scope'],
      'https://example.com/roles': 'admin',
    };
    const reply = await request(app, '/', auth(await mint(a.key, claims)));
    expect(json(reply)).toMatchObject({
      scopes: ['read:messages', 'Messages.Read'],
      roles: ['admin'],
    });
    const payload = { sub: 'k', resource_access: { api: { roles: ['reader', 7, ''] } } };
    expect(
      principalFromClaims(payload, { rolesClaim: ['resource_access', 'api', 'roles'] }),
    ).toMatchObject({ roles: ['reader'] });
    expect(principalFromClaims(payload)).not.toHaveProperty('roles');
    expect(
      principalFromClaims(payload, { rolesClaim: ['resource_access', 'other', 'roles'] }),
    ).not.toHaveProperty('roles');
    expect(() =>
      jwtBearer({
        issuer: a.issuer,
        audience: 'x',
        jwksUrl: a.server.jwksUrl,
        rolesClaim: 'r',
        toPrincipal: () => undefined,
      }),
    ).toThrow(/not both/);
  });
});
