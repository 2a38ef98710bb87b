import {
  type ApiKeyRecord,
  type ApiKeyStore,
  compose,
  createApiKey,
  forbidden,
  getParams,
  HttpError,
  type MethodTable,
  type Middleware,
  notFound,
  readJson,
  requirePrincipal,
  requireRole,
  requireScopes,
  sendJson,
  sendNoContent,
  unprocessable,
} from 'portico';
import { parseScopes } from 'portico/auth';
import { USER_SCOPES } from './users.js';

const MAX_NAME = 100;

/**
 * What only the user's own credentials (session, Basic, client certificate, or an API key)
 * may manage, never a token issued to a client: a delegated token must not mint a key that
 * outlives its grant, nor list or revoke the user's grants.
 */
export function ownCredentialOnly(what: string): Middleware {
  return (req, _res, next) => {
    const { clientId } = requirePrincipal(req);
    if (clientId !== undefined) {
      throw forbidden(`${what} are managed with your own credentials, not a client’s token.`, {
        code: 'ERR_DELEGATED_TOKEN',
      });
    }
    return next();
  };
}

function view(record: ApiKeyRecord) {
  return {
    id: record.id,
    name: record.name ?? null,
    owner: record.owner,
    scopes: record.scopes ?? USER_SCOPES,
    createdAt: record.createdAt,
  };
}

/** The `scopes` of a new key: a JSON body that parsed but says the wrong thing is a 422. */
function validScopes(scopes: unknown[]): string[] {
  try {
    return parseScopes(scopes, 'scopes');
  } catch (error) {
    if (!(error instanceof HttpError) || error.status !== 400) throw error;
    throw unprocessable(
      error.errors ?? [{ field: 'scopes', message: 'must be scopes like read:messages' }],
    );
  }
}

/**
 * `/api/keys`: admins create, list and revoke API keys; the secret is shown once. Managing
 * keys needs the user's full rights as well as the role: a narrower credential of an admin
 * (a token granted `openid` alone, a read-only key) must not mint itself a wider key.
 */
export function keyRoutes(store: ApiKeyStore): Record<string, MethodTable> {
  const admin = compose([
    ownCredentialOnly('API keys'),
    requireRole(['admin']),
    requireScopes(USER_SCOPES),
  ]);
  return {
    '/api/keys': {
      POST: compose([
        admin,
        async (req, res) => {
          const body = await readJson<unknown>(req);
          if (typeof body !== 'object' || body === null || Array.isArray(body)) {
            throw unprocessable([{ field: '', message: 'The body must be a JSON object.' }]);
          }
          const { name, scopes } = body as Record<string, unknown>;
          if (
            name !== undefined &&
            (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME)
          ) {
            throw unprocessable([
              { field: 'name', message: `must be 1–${MAX_NAME} characters long` },
            ]);
          }
          if (scopes !== undefined && !Array.isArray(scopes)) {
            throw unprocessable([{ field: 'scopes', message: 'must be an array of scopes' }]);
          }
          const granted = scopes === undefined ? undefined : validScopes(scopes);
          const beyond = granted?.filter((s) => !USER_SCOPES.includes(s)) ?? [];
          if (beyond.length > 0) {
            throw unprocessable([
              { field: 'scopes', message: `beyond the owner's rights: ${beyond.join(' ')}` },
            ]);
          }
          const owner = requirePrincipal(req).sub;
          const { key, record } = await createApiKey(store, {
            owner,
            name: name as string | undefined,
            scopes: granted,
          });
          sendJson(
            res,
            201,
            { ...view(record), key },
            { Location: `/api/keys/${record.id}`, 'Cache-Control': 'no-store' },
          );
        },
      ]),
      GET: compose([
        admin,
        async (_req, res) => {
          const records = await store.list();
          sendJson(res, 200, records.map(view));
        },
      ]),
    },
    '/api/keys/:id': {
      DELETE: compose([
        admin,
        async (req, res) => {
          const deleted = await store.delete(getParams(req).id ?? '');
          if (!deleted) throw notFound('No API key has this id.');
          sendNoContent(res);
        },
      ]),
    },
  };
}
