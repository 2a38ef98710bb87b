// Local stand-ins of the identity providers of docs/providers.md: each serves its discovery
// document and JWKS on 127.0.0.1 at the provider's own paths, and issues tokens shaped as the
// provider issues them (header `kid` and `typ`, RS256, the claims and their formats). The
// values the recipes write (audiences, client ids, tenants) are the ones below.
import {
  discoveryDocument,
  id,
  now,
  rsaKey,
  type StandInKey,
  type StandInServer,
  sign,
  startStandInServer,
} from './stand-in-server.js';

export type ProviderName =
  | 'auth0'
  | 'okta'
  | 'entra'
  | 'cognito'
  | 'keycloak'
  | 'google'
  | 'github';

/** A running stand-in. */
export interface StandIn {
  name: ProviderName;
  /** What a recipe reads (`AUTH0_URL`…) and the tokens its curl lines send (`ACCESS_TOKEN`…). */
  env: Record<string, string>;
  /** The paths the recipe's service asked the stand-in for. */
  requests: string[];
  close(): Promise<void>;
}

/** The values the recipes of docs/providers.md configure. */
export const RECIPES = {
  auth0: { audience: 'https://api.example.com', rolesClaim: 'https://example.com/roles' },
  okta: { authServer: 'default', audience: 'api://default' },
  entra: {
    clientId: '6e74172b-be56-4843-9ff4-e66a39bb12e3',
    tenants: ['72f988bf-86f1-41af-91ab-2d7cd011db47', 'f8cdef31-a31e-4b4a-93e4-5f571e91255a'],
    stranger: '9188040d-6c67-4c5b-b112-36a304b66dad',
  },
  cognito: { pool: 'us-east-1_AbCdEf123', clientId: '1example23456789abcdefghij' },
  keycloak: { realm: 'acme', audience: 'messages-api', client: 'web-app' },
  google: {
    clientId: '1234987819200-k3e9dqi4sd7ktc0f8rj6bqg0b1a2c3d4.apps.googleusercontent.com',
    domain: 'example.com',
  },
  github: { audience: 'https://deploy.example.com', repository: 'octo-org/octo-repo' },
} as const;

const hex = (n: number) =>
  Array.from({ length: n }, () => '0123456789abcdef'[Math.floor(Math.random() * 16)]).join('');
const b64 = (bytes: number, url = true) =>
  Buffer.from(Array.from({ length: bytes }, () => Math.floor(Math.random() * 256))).toString(
    url ? 'base64url' : 'base64',
  );

type Tokens = Record<string, string>;
type Setup = (server: StandInServer) => Promise<{ env: Record<string, string>; tokens: Tokens }>;

/** A JWKS entry: the key's public JWK with the members `extra` names. */
const jwkOf = (key: StandInKey, extra: Record<string, string>) => ({ ...extra, ...key.jwk });

/** Auth0: issuer `https://TENANT.auth0.com/` (a slash at the end), JWKS at /.well-known/jwks.json. */
const auth0: Setup = async (server) => {
  const issuer = `${server.origin}/`;
  const [current, next] = [await rsaKey(), await rsaKey()];
  const kids = [b64(24), b64(24)];
  server.serve(
    '/.well-known/openid-configuration',
    discoveryDocument(issuer, `${issuer}.well-known/jwks.json`),
  );
  server.serve('/.well-known/jwks.json', {
    keys: [current, next].map((k, i) => jwkOf(k, { alg: 'RS256', use: 'sig', kid: kids[i]! })),
  });
  const t = now();
  const token = await sign(
    current,
    { alg: 'RS256', typ: 'JWT', kid: kids[0]! },
    {
      iss: issuer,
      sub: 'auth0|6650f1c2e4d1a2b3c4d5e6f7',
      aud: [RECIPES.auth0.audience, `${issuer}userinfo`],
      iat: t,
      exp: t + 86_400,
      scope: 'openid profile email read:messages',
      azp: 'kV3xQ9mZt2LpR8sW4yB7nC1dF6gH0jKa',
      permissions: ['read:messages'],
      [RECIPES.auth0.rolesClaim]: ['admin'],
    },
  );
  const otherApi = await sign(
    current,
    { alg: 'RS256', typ: 'JWT', kid: kids[0]! },
    {
      iss: issuer,
      sub: 'auth0|6650f1c2e4d1a2b3c4d5e6f7',
      aud: 'https://billing.example.com',
      iat: t,
      exp: t + 86_400,
      scope: 'read:invoices',
      azp: 'kV3xQ9mZt2LpR8sW4yB7nC1dF6gH0jKa',
    },
  );
  return {
    env: { AUTH0_URL: server.origin },
    tokens: { ACCESS_TOKEN: token, OTHER_API_TOKEN: otherApi },
  };
};

/** Okta: a custom authorization server, `https://ORG.okta.com/oauth2/default`, keys at /v1/keys. */
const okta: Setup = async (server) => {
  const issuer = `${server.origin}/oauth2/${RECIPES.okta.authServer}`;
  const key = await rsaKey();
  const kid = b64(32);
  const path = `/oauth2/${RECIPES.okta.authServer}`;
  server.serve(
    `${path}/.well-known/openid-configuration`,
    discoveryDocument(issuer, `${issuer}/v1/keys`),
  );
  server.serve(
    `${path}/.well-known/oauth-authorization-server`,
    discoveryDocument(issuer, `${issuer}/v1/keys`),
  );
  server.serve(`${path}/v1/keys`, { keys: [jwkOf(key, { kid, alg: 'RS256', use: 'sig' })] });
  const t = now();
  const access = (claims: Record<string, unknown>) =>
    sign(
      key,
      { kid, alg: 'RS256' },
      {
        ver: 1,
        jti: `AT.${b64(32)}`,
        iss: issuer,
        aud: RECIPES.okta.audience,
        iat: t,
        exp: t + 3600,
        cid: '0oa1b2c3d4E5F6g7H8i9',
        ...claims,
      },
    );
  return {
    env: { OKTA_URL: server.origin },
    tokens: {
      ACCESS_TOKEN: await access({
        uid: '00u1a2b3c4D5e6F7g8h9',
        scp: ['openid', 'email', 'read:messages'],
        auth_time: t - 60,
        sub: 'alice@example.com',
        groups: ['Everyone', 'Admins'],
      }),
      // client credentials: the client is the subject, no user and no groups
      SERVICE_TOKEN: await access({ scp: ['read:messages'], sub: '0oa1b2c3d4E5F6g7H8i9' }),
    },
  };
};

/** Entra ID v2: `https://login.microsoftonline.com/TENANT/v2.0`, one key set for every tenant. */
const entra: Setup = async (server) => {
  const key = await rsaKey();
  const kid = b64(20);
  const { clientId, tenants, stranger } = RECIPES.entra;
  for (const tid of [...tenants, stranger]) {
    const issuer = `${server.origin}/${tid}/v2.0`;
    const jwksUri = `${server.origin}/${tid}/discovery/v2.0/keys`;
    server.serve(
      `/${tid}/v2.0/.well-known/openid-configuration`,
      discoveryDocument(issuer, jwksUri, { tenant_region_scope: 'EU' }),
    );
    server.serve(`/${tid}/discovery/v2.0/keys`, {
      keys: [jwkOf(key, { kty: 'RSA', use: 'sig', kid, x5t: kid, issuer })],
    });
  }
  const t = now();
  const token = (tid: string, claims: Record<string, unknown>) =>
    sign(
      key,
      { typ: 'JWT', alg: 'RS256', kid },
      {
        aud: clientId,
        iss: `${server.origin}/${tid}/v2.0`,
        iat: t,
        nbf: t,
        exp: t + 4200,
        aio: b64(60),
        azp: 'c44b4083-3bb0-49c1-b47d-974e53cbdf3c',
        azpacr: '0',
        rh: `0.${b64(40)}.`,
        tid,
        uti: b64(16),
        ver: '2.0',
        ...claims,
      },
    );
  const user = (tid: string, sub: string) =>
    token(tid, {
      name: 'Alice Example',
      oid: '00000000-0000-0000-66f3-3332eca7ea81',
      preferred_username: 'alice@contoso.com',
      scp: 'Messages.Read',
      roles: ['Messages.Admin'],
      sub,
    });
  return {
    env: { ENTRA_URL: server.origin },
    tokens: {
      ACCESS_TOKEN: await user(tenants[0], 'AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ'),
      OTHER_TENANT_TOKEN: await user(tenants[1], 'BBBBBBBBBBBBBBBBBBBBBCnGq7tlDBiB6zu8cEv7Exw'),
      STRANGER_TOKEN: await user(stranger, 'CCCCCCCCCCCCCCCCCCCCCDc9cQ1W3Gy0M1i0rXwXoLw'),
      // an app-only token (client credentials): app roles, no scp, idtyp app
      APP_TOKEN: await token(tenants[0], {
        oid: '3f8b5c2e-1d4a-4e6b-9c7d-2a1b0c9d8e7f',
        roles: ['Messages.Read.All'],
        sub: '3f8b5c2e-1d4a-4e6b-9c7d-2a1b0c9d8e7f',
        idtyp: 'app',
      }),
    },
  };
};

/** Cognito: `https://cognito-idp.REGION.amazonaws.com/POOL`; its access tokens have no `aud`. */
const cognito: Setup = async (server) => {
  const { pool, clientId } = RECIPES.cognito;
  const issuer = `${server.origin}/${pool}`;
  const [idKey, accessKey] = [await rsaKey(), await rsaKey()];
  const [idKid, accessKid] = [b64(32, false), b64(32, false)];
  server.serve(
    `/${pool}/.well-known/openid-configuration`,
    discoveryDocument(issuer, `${issuer}/.well-known/jwks.json`),
  );
  server.serve(`/${pool}/.well-known/jwks.json`, {
    keys: [
      jwkOf(idKey, { alg: 'RS256', kid: idKid, use: 'sig' }),
      jwkOf(accessKey, { alg: 'RS256', kid: accessKid, use: 'sig' }),
    ],
  });
  const t = now();
  const sub = 'a1b2c3d4-0000-1111-2222-333344445555';
  const session = {
    origin_jti: id(),
    event_id: id(),
    auth_time: t - 30,
    iat: t,
    exp: t + 3600,
    jti: id(),
  };
  const access = await sign(
    accessKey,
    { kid: accessKid, alg: 'RS256' },
    {
      sub,
      'cognito:groups': ['admin'],
      iss: issuer,
      version: 2,
      client_id: clientId,
      token_use: 'access',
      scope: 'messages-api/read openid',
      username: 'alice',
      ...session,
    },
  );
  const idToken = await sign(
    idKey,
    { kid: idKid, alg: 'RS256' },
    {
      sub,
      'cognito:groups': ['admin'],
      email_verified: true,
      iss: issuer,
      'cognito:username': 'alice',
      aud: clientId,
      token_use: 'id',
      email: 'alice@example.com',
      ...session,
    },
  );
  return {
    env: { COGNITO_URL: server.origin },
    tokens: { ACCESS_TOKEN: access, ID_TOKEN: idToken },
  };
};

/** Keycloak: `https://HOST/realms/REALM`, keys at /protocol/openid-connect/certs. */
const keycloak: Setup = async (server) => {
  const { realm, audience, client } = RECIPES.keycloak;
  const issuer = `${server.origin}/realms/${realm}`;
  const [key, encryption] = [await rsaKey(), await rsaKey()];
  const [kid, encKid] = [b64(32), b64(32)];
  const certs = `${issuer}/protocol/openid-connect/certs`;
  server.serve(
    `/realms/${realm}/.well-known/openid-configuration`,
    discoveryDocument(issuer, certs),
  );
  server.serve(`/realms/${realm}/protocol/openid-connect/certs`, {
    keys: [
      jwkOf(encryption, { kid: encKid, kty: 'RSA', alg: 'RSA-OAEP', use: 'enc' }),
      jwkOf(key, { kid, kty: 'RSA', alg: 'RS256', use: 'sig' }),
    ],
  });
  const t = now();
  const user = {
    exp: t + 300,
    iat: t,
    auth_time: t - 10,
    jti: id(),
    iss: issuer,
    sub: 'f3c1a9e2-7b4d-4c8e-9a1f-2d3e4f5a6b7c',
    azp: client,
    sid: id(),
    acr: '1',
    email_verified: true,
    name: 'Alice Example',
    preferred_username: 'alice',
    given_name: 'Alice',
    family_name: 'Example',
    email: 'alice@example.com',
  };
  const header = { alg: 'RS256', typ: 'JWT', kid };
  return {
    env: { KEYCLOAK_URL: server.origin },
    tokens: {
      ACCESS_TOKEN: await sign(key, header, {
        ...user,
        aud: [audience, 'account'],
        typ: 'Bearer',
        'allowed-origins': ['https://app.example.com'],
        realm_access: {
          roles: ['default-roles-acme', 'offline_access', 'uma_authorization', 'admin'],
        },
        resource_access: {
          [audience]: { roles: ['reader'] },
          account: { roles: ['manage-account', 'view-profile'] },
        },
        scope: 'openid profile email',
      }),
      ID_TOKEN: await sign(key, header, { ...user, aud: audience, typ: 'ID', at_hash: b64(16) }),
    },
  };
};

/** Google: ID tokens of `https://accounts.google.com`, keys at www.googleapis.com/oauth2/v3/certs. */
const google: Setup = async (server) => {
  const { clientId, domain } = RECIPES.google;
  const issuer = server.origin;
  const [key, next] = [await rsaKey(), await rsaKey()];
  const kids = [hex(40), hex(40)];
  const certs = `${server.origin}/oauth2/v3/certs`;
  // the endpoints a relying party is sent to (docs/sign-in.md): the stand-in serves none of them
  server.serve(
    '/.well-known/openid-configuration',
    discoveryDocument(issuer, certs, {
      authorization_endpoint: `${issuer}/o/oauth2/v2/auth`,
      token_endpoint: `${issuer}/token`,
      code_challenge_methods_supported: ['S256'],
    }),
  );
  server.serve('/oauth2/v3/certs', {
    keys: [key, next].map((k, i) => jwkOf(k, { alg: 'RS256', kid: kids[i]!, use: 'sig' })),
  });
  const t = now();
  const idToken = (claims: Record<string, unknown>) =>
    sign(
      key,
      { alg: 'RS256', kid: kids[0]!, typ: 'JWT' },
      {
        iss: issuer,
        azp: clientId,
        aud: clientId,
        sub: '110169484474386276334',
        email_verified: true,
        at_hash: b64(16),
        name: 'Alice Example',
        picture: 'https://lh3.googleusercontent.com/a/ACg8ocL',
        given_name: 'Alice',
        family_name: 'Example',
        iat: t,
        exp: t + 3600,
        ...claims,
      },
    );
  return {
    env: { GOOGLE_URL: issuer, GOOGLE_JWKS_URL: certs },
    tokens: {
      ID_TOKEN: await idToken({ hd: domain, email: `alice@${domain}` }),
      // a personal account: no `hd`
      GMAIL_TOKEN: await idToken({ email: 'alice@gmail.com', sub: '104411358222131578954' }),
    },
  };
};

/** GitHub Actions OIDC: `https://token.actions.githubusercontent.com`, keys at /.well-known/jwks. */
const github: Setup = async (server) => {
  const { audience, repository } = RECIPES.github;
  const issuer = server.origin;
  const key = await rsaKey();
  const [kid, x5t] = [hex(40).toUpperCase(), b64(20)];
  server.serve(
    '/.well-known/openid-configuration',
    discoveryDocument(issuer, `${issuer}/.well-known/jwks`, {
      claims_supported: [
        'sub',
        'aud',
        'exp',
        'iat',
        'iss',
        'jti',
        'nbf',
        'ref',
        'repository',
        'repository_owner',
      ],
    }),
  );
  server.serve('/.well-known/jwks', {
    keys: [jwkOf(key, { kty: 'RSA', alg: 'RS256', use: 'sig', kid, x5t })],
  });
  const t = now();
  const job = (ref: string) =>
    sign(
      key,
      { typ: 'JWT', alg: 'RS256', x5t, kid },
      {
        jti: id(),
        sub: `repo:${repository}:ref:${ref}`,
        aud: audience,
        ref,
        sha: hex(40),
        repository,
        repository_owner: 'octo-org',
        repository_owner_id: '65',
        run_id: '5964186113',
        run_number: '10',
        run_attempt: '1',
        repository_visibility: 'private',
        repository_id: '74',
        actor_id: '12',
        actor: 'octocat',
        workflow: 'deploy',
        head_ref: '',
        base_ref: '',
        event_name: 'push',
        ref_type: 'branch',
        workflow_ref: `${repository}/.github/workflows/deploy.yml@${ref}`,
        job_workflow_ref: `${repository}/.github/workflows/deploy.yml@${ref}`,
        runner_environment: 'github-hosted',
        iss: issuer,
        nbf: t - 5,
        exp: t + 300,
        iat: t,
      },
    );
  return {
    env: { GITHUB_OIDC_URL: issuer },
    tokens: {
      ID_TOKEN: await job('refs/heads/main'),
      BRANCH_TOKEN: await job('refs/heads/feature'),
    },
  };
};

const SETUPS: Record<ProviderName, Setup> = {
  auth0,
  okta,
  entra,
  cognito,
  keycloak,
  google,
  github,
};

/** Whether `name` is a provider with a stand-in. */
export const isProvider = (name: string): name is ProviderName => Object.hasOwn(SETUPS, name);

/** Starts the stand-in of `name` on 127.0.0.1 (port 0). */
export async function startStandIn(name: ProviderName): Promise<StandIn> {
  const server = await startStandInServer();
  try {
    const { env, tokens } = await SETUPS[name](server);
    return { name, env: { ...env, ...tokens }, requests: server.requests, close: server.close };
  } catch (error) {
    await server.close();
    throw error;
  }
}
