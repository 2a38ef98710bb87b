// createClientMetadataDocuments() read closely (clients/metadata-document.ts): its options and
// their exact messages, the request it makes and the answers it refuses, its cache and busy
// bounds, and the server's glue (clientMetadataDocumentsOption, withClientMetadataDocuments).
import { createServer } from 'node:https';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  ClientMetadataDocumentError,
  type ClientMetadataDocumentOptions,
  type ClientMetadataDocuments,
  clientMetadataDocumentsOption,
  createClientMetadataDocuments,
  withClientMetadataDocuments,
} from '../../../src/oauth/clients/metadata-document.js';
import type { OAuthClient } from '../../../src/oauth/index.js';
import { requireOpenssl } from '../../helpers/tools.js';
import {
  type DocumentServer,
  loopback,
  makeTestTls,
  startDocumentServer,
  type TestTls,
} from './document-server.js';

/** What undici's loader answers in this file: undici itself, unless a test says otherwise. */
const undiciHook = vi.hoisted(() => ({
  /** The next load fails with this (once). */
  fail: undefined as Error | undefined,
  /** Answers the requests instead of the network. */
  request: undefined as
    | ((url: string) => Promise<{ statusCode: number; headers: object; body: Readable }>)
    | undefined,
}));

vi.mock('../../../src/internal/lazy.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../../src/internal/lazy.js')>();
  return {
    ...actual,
    loadUndici: async () => {
      const failure = undiciHook.fail;
      if (failure !== undefined) {
        undiciHook.fail = undefined;
        throw failure;
      }
      const undici = await actual.loadUndici();
      return undiciHook.request === undefined ? undici : { ...undici, request: undiciHook.request };
    },
  };
});

afterEach(() => {
  undiciHook.fail = undefined;
  undiciHook.request = undefined;
  vi.restoreAllMocks();
});

const hasOpenssl = requireOpenssl();
const OWNER = 'createClientMetadataDocuments()';

let tls: TestTls;
let docs: DocumentServer;
let seq = 0;

const documentOf = (url: string) => ({
  client_id: url,
  redirect_uris: ['http://127.0.0.1:3000/callback'],
  token_endpoint_auth_method: 'none',
});

const path = (name: string) => `/${name}-${++seq}/client.json`;

const resolver = (options: ClientMetadataDocumentOptions = {}) =>
  createClientMetadataDocuments({ allowPrivate: true, ca: tls.ca, lookup: loopback, ...options });

/** A resolver whose every lookup fails (an `address` refusal, nothing fetched), counted. */
function unresolving(options: ClientMetadataDocumentOptions = {}) {
  const asked: string[] = [];
  const documents = createClientMetadataDocuments({
    lookup: async (host: string) => {
      asked.push(host);
      throw new Error('ENOTFOUND');
    },
    ...options,
  });
  return { documents, asked };
}

/** The message of the invalid option `fn` throws (a TypeError of code ERR_INVALID_OPTION). */
function invalidOptionOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    expect((error as { code?: string }).code).toBe('ERR_INVALID_OPTION');
    return (error as Error).message;
  }
  throw new Error('nothing thrown');
}

async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ClientMetadataDocumentError);
  return error as ClientMetadataDocumentError;
}

beforeAll(async () => {
  if (!hasOpenssl) return;
  tls = makeTestTls();
  docs = await startDocumentServer(tls);
});

afterAll(async () => {
  await docs?.close();
  tls?.remove();
});

describe('createClientMetadataDocuments() options', () => {
  const create = (options: unknown) => () =>
    createClientMetadataDocuments(options as ClientMetadataDocumentOptions);

  it('refuses options that are not an object', () => {
    for (const options of [null, 'fast', 5, true]) {
      expect(invalidOptionOf(create(options))).toBe(`${OWNER}: the options must be an object`);
    }
  });

  it('bounds timeout, maxBytes and failureMaxAge, naming each', () => {
    const bounded: [object, string][] = [
      [{ timeout: 0 }, '`timeout` must be milliseconds, 1–60000'],
      [{ timeout: '0ms' }, '`timeout` must be milliseconds, 1–60000'],
      [{ timeout: 60_001 }, '`timeout` must be milliseconds, 1–60000'],
      [{ maxBytes: 1_048_577 }, '`maxBytes` must be an integer, 1–1048576'],
      [{ maxBytes: 0 }, '`maxBytes` must be an integer, 1–1048576'],
      [{ failureMaxAge: 86_400_001 }, '`failureMaxAge` must be milliseconds, 0–86400000'],
      [{ failureMaxAge: -1 }, '`failureMaxAge` must be milliseconds, 0–86400000'],
    ];
    for (const [options, message] of bounded) {
      expect(invalidOptionOf(create(options))).toBe(`${OWNER}: ${message}`);
    }
    for (const options of [
      { timeout: 60_000 },
      { timeout: '1ms' },
      { maxBytes: 1_048_576 },
      { failureMaxAge: 86_400_000 },
      { failureMaxAge: 0 },
    ]) {
      expect(create(options)).not.toThrow();
    }
  });

  it('takes scopes as a list of non-empty scope tokens only', () => {
    const message = `${OWNER}: \`scopes\` must be a list of scopes`;
    for (const scopes of ['openid', [''], ['read', ''], [7], ['read', 7], ['read', 'a b']]) {
      expect(invalidOptionOf(create({ scopes }))).toBe(message);
    }
    for (const scopes of [[], ['read'], ['read', 'write:all']]) {
      expect(create({ scopes })).not.toThrow();
    }
  });
});

describe('the client id, checked before any fetch', () => {
  it('shows an id of exactly 200 characters whole, and a longer one cut', async () => {
    const { documents } = unresolving();
    const id = `http://agent.example/${'a'.repeat(179)}`;
    expect(id).toHaveLength(200);
    const refused = await refusal(documents.resolve(id));
    expect(refused.message).toBe(
      `The client id ${JSON.stringify(id)} must be an https: URL to be looked up.`,
    );
    expect((await refusal(documents.resolve(`${id}b`))).message).toBe(
      `The client id ${JSON.stringify(`${id}…`)} must be an https: URL to be looked up.`,
    );
  });

  it('looks up an id of exactly 1024 characters, and refuses one of 1025', async () => {
    const { documents, asked } = unresolving();
    const id = `https://agent.example/${'a'.repeat(1_002)}`;
    expect(id).toHaveLength(1_024);
    const refused = await refusal(documents.resolve(id));
    expect(refused.reason).toBe('address');
    expect(refused.message).toBe(`The host of the metadata document ${id} does not resolve.`);
    expect(asked).toEqual(['agent.example']);
    expect((await refusal(documents.resolve(`${id}a`))).reason).toBe('invalid-id');
    expect(asked).toHaveLength(1);
  });

  it('handles only strings written as http(s) URLs', () => {
    const { documents } = unresolving();
    const written = { toString: () => 'https://agent.example/client.json' };
    expect(documents.handles(written as unknown as string)).toBe(false);
    expect(documents.handles(new URL('https://agent.example/c') as unknown as string)).toBe(false);
    expect(documents.handles('https://agent.example/client.json')).toBe(true);
  });
});

describe('the cache of failures, to the millisecond', () => {
  it('remembers a failure until failureMaxAge has passed, not at its end', async () => {
    const now = vi.spyOn(Date, 'now').mockReturnValue(1_000_000);
    const { documents, asked } = unresolving({ failureMaxAge: '1s' });
    const id = 'https://agent.example/client.json';
    expect((await refusal(documents.resolve(id))).reason).toBe('address');
    now.mockReturnValue(1_000_999);
    expect((await refusal(documents.resolve(id))).reason).toBe('address');
    expect(asked).toHaveLength(1);
    now.mockReturnValue(1_001_000);
    expect((await refusal(documents.resolve(id))).reason).toBe('address');
    expect(asked).toHaveLength(2);
  });

  it('does not remember a failure that is not a refusal of the document', async () => {
    const { documents, asked } = unresolving({ failureMaxAge: '1h' });
    const id = 'https://agent.example/client.json';
    const boom = new Error('undici could not be loaded');
    undiciHook.fail = boom;
    await expect(documents.resolve(id)).rejects.toBe(boom);
    expect((await refusal(documents.resolve(id))).reason).toBe('address');
    expect(asked).toHaveLength(1);
  });
});

describe('clientMetadataDocumentsOption()', () => {
  const owner = 'createAuthorizationServer()';

  it('is off for undefined and false', () => {
    expect(clientMetadataDocumentsOption(owner, undefined)).toBeUndefined();
    expect(clientMetadataDocumentsOption(owner, false)).toBeUndefined();
    expect(clientMetadataDocumentsOption(owner, undefined, ['read'])).toBeUndefined();
  });

  it('makes a resolver with the defaults for true, and takes a resolver as it is', () => {
    const documents = clientMetadataDocumentsOption(owner, true);
    expect(documents).toBeDefined();
    expect(documents?.allowPrivate).toBe(false);
    expect(documents?.handles('https://agent.example/client.json')).toBe(true);
    const given = createClientMetadataDocuments();
    expect(clientMetadataDocumentsOption(owner, given, ['read'])).toBe(given);
  });

  it('refuses what is neither true, options nor a resolver', () => {
    const message = `${owner}: \`clientMetadataDocuments\` must be true, options or createClientMetadataDocuments()`;
    for (const value of [null, 'yes', 1]) {
      const option = () => clientMetadataDocumentsOption(owner, value as unknown as boolean);
      expect(invalidOptionOf(option)).toBe(message);
    }
  });

  it("gives true the server's scopes", async () => {
    const id = 'https://agent.example/client.json';
    undiciHook.request = async () => ({
      statusCode: 200,
      headers: { 'content-type': 'application/json' },
      body: Readable.from([Buffer.from(JSON.stringify(documentOf(id)))]),
    });
    const documents = clientMetadataDocumentsOption(owner, true, ['read', 'write'])!;
    expect((await documents.resolve(id)).scopes).toEqual(['read', 'write']);
    const defaults = clientMetadataDocumentsOption(owner, true)!;
    expect((await defaults.resolve(id)).scopes).toEqual([
      'openid',
      'profile',
      'email',
      'offline_access',
    ]);
  });

  it.skipIf(!hasOpenssl)(
    "gives options without scopes the server's, keeping the others",
    async () => {
      const url = docs.json(path('option'), documentOf);
      const options = { allowPrivate: true, ca: tls.ca, lookup: loopback };
      const documents = clientMetadataDocumentsOption(owner, options, ['read'])!;
      expect(documents.allowPrivate).toBe(true);
      expect((await documents.resolve(url)).scopes).toEqual(['read']);
      const own = clientMetadataDocumentsOption(owner, { ...options, scopes: ['own'] }, ['read'])!;
      expect((await own.resolve(url)).scopes).toEqual(['own']);
      await documents.close();
      await own.close();
    },
  );
});

describe('withClientMetadataDocuments()', () => {
  const stored: OAuthClient = Object.freeze({
    clientId: 'demo-web',
    grantTypes: ['authorization_code'],
    redirectUris: ['https://app.example/cb'],
    scopes: ['openid'],
  }) as OAuthClient;
  const described = { ...stored, clientId: 'https://agent.example/client.json' } as OAuthClient;

  /** A resolver that handles what `handles` says and answers `described`, recording calls. */
  function stub(handles: (id: unknown) => boolean) {
    const calls: unknown[] = [];
    const documents: ClientMetadataDocuments = {
      handles: (id) => {
        calls.push(['handles', id]);
        return handles(id);
      },
      resolve: async (id) => {
        calls.push(['resolve', id]);
        return described;
      },
      close: async () => {},
    };
    return { documents, calls };
  }

  const store = {
    get: (id: string) => (id === stored.clientId || id === described.clientId ? stored : undefined),
  };

  it('is the store itself without documents', () => {
    expect(withClientMetadataDocuments(store, undefined)).toBe(store);
  });

  it('asks the documents for a URL the store does not have', async () => {
    const { documents, calls } = stub((id) => typeof id === 'string' && id.startsWith('https:'));
    const clients = withClientMetadataDocuments(store, documents);
    expect(clients).not.toBe(store);
    expect(await clients.get('https://agent.example/other.json')).toBe(described);
    expect(calls).toEqual([
      ['handles', 'https://agent.example/other.json'],
      ['resolve', 'https://agent.example/other.json'],
    ]);
  });

  it('answers what the store has, URL or not, without asking the documents', async () => {
    const { documents, calls } = stub(() => true);
    const clients = withClientMetadataDocuments(store, documents);
    expect(await clients.get('demo-web')).toBe(stored);
    expect(await clients.get(described.clientId)).toBe(stored);
    expect(calls).toEqual([]);
  });

  it("keeps a writable store's add, replace and remove, bound to the store", async () => {
    const { documents } = stub(() => false);
    const seen: unknown[] = [];
    const writable = {
      ...store,
      name: 'writable',
      add(this: { name: string }, client: unknown) {
        seen.push(['add', this.name, client]);
      },
      replace(this: { name: string }, client: unknown) {
        seen.push(['replace', this.name, client]);
      },
      remove(this: { name: string }, id: unknown) {
        seen.push(['remove', this.name, id]);
      },
    };
    const clients = withClientMetadataDocuments(writable, documents) as unknown as Record<
      'add' | 'replace' | 'remove',
      (arg: unknown) => unknown
    >;
    expect(Object.keys(clients).sort()).toEqual(['add', 'get', 'remove', 'replace']);
    clients.add(stored);
    clients.replace(stored);
    clients.remove('demo-web');
    expect(seen).toEqual([
      ['add', 'writable', stored],
      ['replace', 'writable', stored],
      ['remove', 'writable', 'demo-web'],
    ]);
    const readOnly = withClientMetadataDocuments(store, documents);
    expect(Object.keys(readOnly)).toEqual(['get']);
  });

  it('answers undefined for an id the documents do not handle, or that is not a string', async () => {
    const { documents, calls } = stub((id) => typeof id === 'string' && id.startsWith('https:'));
    const clients = withClientMetadataDocuments(store, documents);
    expect(await clients.get('other-app')).toBeUndefined();
    expect(calls).toEqual([['handles', 'other-app']]);
    const { documents: all, calls: asked } = stub(() => true);
    const anything = withClientMetadataDocuments(store, all);
    expect(await anything.get(42 as unknown as string)).toBeUndefined();
    expect(asked).toEqual([]);
  });
});

describe.skipIf(!hasOpenssl)('the fetch of a document', () => {
  it('is a GET with the user agent portico-client-metadata/1', async () => {
    const url = docs.json(path('seen'), documentOf);
    const inner = docs.routes.get(new URL(url).pathname)!;
    const seen: { method?: string; agent?: string }[] = [];
    docs.routes.set(new URL(url).pathname, (req, res) => {
      seen.push({ method: req.method, agent: req.headers['user-agent'] });
      inner(req, res);
    });
    const documents = resolver();
    expect((await documents.resolve(url)).clientId).toBe(url);
    expect(seen).toEqual([{ method: 'GET', agent: 'portico-client-metadata/1' }]);
    await documents.close();
  });

  it.each([
    [300, 'redirect'],
    [301, 'redirect'],
    [399, 'redirect'],
    [400, 'status'],
    [299, 'status'],
  ] as const)('answers a %i as %s', async (status, reason) => {
    const p = path(`status${status}`);
    docs.routes.set(p, (_req, res) => res.writeHead(status).end());
    const url = `${docs.origin}${p}`;
    const refused = await refusal(resolver().resolve(url));
    expect(refused.reason).toBe(reason);
    expect(refused.message).toBe(
      reason === 'redirect'
        ? `The metadata document of ${url} answers with a redirect, which is not followed.`
        : `The metadata document of ${url} could not be fetched (HTTP ${status}).`,
    );
  });

  it('says a TLS failure exactly', async () => {
    const url = docs.json(path('untrusted'), documentOf);
    const documents = createClientMetadataDocuments({ allowPrivate: true, lookup: loopback });
    const refused = await refusal(documents.resolve(url));
    expect(refused.reason).toBe('unreachable');
    expect(refused.message).toBe(
      `The metadata document of ${url} could not be fetched (connection or TLS failure).`,
    );
    await documents.close();
  });

  it('leaves no timer running once the fetch is done', async () => {
    const url = docs.json(path('timer'), documentOf);
    const setTimer = vi.spyOn(globalThis, 'setTimeout');
    const clearTimer = vi.spyOn(globalThis, 'clearTimeout');
    const documents = resolver({ timeout: 59_999 });
    await documents.resolve(url);
    const timers = setTimer.mock.calls
      .map((call, i) => [call[1], setTimer.mock.results[i]?.value] as const)
      .filter(([delay]) => delay === 59_999)
      .map(([, timer]) => timer);
    expect(timers).toHaveLength(1);
    expect(clearTimer).toHaveBeenCalledWith(timers[0]);
    await documents.close();
  });

  it('closes its idle connections on close(), without waiting for their keep-alive', async () => {
    const sockets: Socket[] = [];
    const closedAt: number[] = [];
    const server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
      const url = `https://localhost:${port}${req.url}`;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(documentOf(url)));
    });
    server.on('secureConnection', (socket: Socket) => {
      sockets.push(socket);
      socket.on('close', () => closedAt.push(Date.now()));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      const documents = resolver();
      await documents.resolve(`https://localhost:${port}/client.json`);
      expect(sockets).toHaveLength(1);
      expect(closedAt).toEqual([]);
      const closing = documents.close();
      expect(closing).toBeInstanceOf(Promise);
      const asked = Date.now();
      await closing;
      while (closedAt.length === 0 && Date.now() - asked < 900) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      // closed within 900 ms of close(): the agent's keep-alive alone would take 1 s
      expect(closedAt).toHaveLength(1);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('closes the connection of a body it refuses by its Content-Length at once', async () => {
    const p = path('announced');
    let closedAfter: number | undefined;
    let refusedAt = 0;
    const closed = new Promise<void>((resolve) => {
      docs.routes.set(p, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': 1_000_000 });
        res.flushHeaders();
        res.once('close', () => {
          closedAfter = Date.now() - refusedAt;
          resolve();
        });
      });
    });
    const documents = resolver({ maxBytes: 2_048, timeout: '30s' });
    const pending = refusal(documents.resolve(`${docs.origin}${p}`));
    const refused = await pending;
    refusedAt = Date.now();
    expect(refused.reason).toBe('too-large');
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1_500))]);
    // closed within 1.5 s: left open, the body would wait for its 30 s timeout
    expect(closedAfter).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await documents.close();
  });
});

describe.skipIf(!hasOpenssl)('Cache-Control of a document', () => {
  async function fetchesWith(cc: string): Promise<number> {
    const p = path('cc');
    docs.routes.set(p, (_req, res) => {
      res.setHeader('cache-control', cc);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(documentOf(`${docs.origin}${p}`)));
    });
    const documents = resolver();
    await documents.resolve(`${docs.origin}${p}`);
    await documents.resolve(`${docs.origin}${p}`);
    return docs.hits.get(p) ?? 0;
  }

  it.each([
    ['max-age="60"', 1],
    ['max-age=6"0', 2],
    ['max-age="6"0"', 2],
    ['max-age=1e999', 2],
    ['max-age=-1', 2],
    ['max-age=0', 2],
    ['max-age=1', 1],
  ] as const)('Cache-Control %s: %i fetches for two lookups', async (cc, fetches) => {
    expect(await fetchesWith(cc)).toBe(fetches);
  });

  it('keeps a document it will fetch again anyway out of the cache: it evicts nothing', async () => {
    const kept = docs.json(path('kept'), documentOf, { 'cache-control': 'max-age=60' });
    const unstored = docs.json(path('unstored'), documentOf, { 'cache-control': 'no-store' });
    const documents = resolver({ maxEntries: 1 });
    await documents.resolve(kept);
    await documents.resolve(unstored);
    await documents.resolve(kept);
    expect(docs.hits.get(new URL(kept).pathname)).toBe(1);
    expect(docs.hits.get(new URL(unstored).pathname)).toBe(1);
  });
});

describe.skipIf(!hasOpenssl)('the fetches of one host at once', () => {
  it('counts those still running after one ends: 2 at most, always', async () => {
    const held = new Map<string, () => void>();
    const urls = [1, 2, 3, 4].map(() => {
      const p = path('host');
      docs.routes.set(p, (_req, res) => {
        held.set(p, () =>
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify(documentOf(`${docs.origin}${p}`))),
        );
      });
      return `${docs.origin}${p}`;
    });
    const release = async (url: string) => {
      const p = new URL(url).pathname;
      while (!held.has(p)) await new Promise((resolve) => setTimeout(resolve, 5));
      held.get(p)!();
    };
    const documents = resolver({ failureMaxAge: 0 });
    const first = documents.resolve(urls[0]!);
    const second = documents.resolve(urls[1]!);
    await release(urls[0]!);
    expect((await first).clientId).toBe(urls[0]);
    // one still runs: one more may start, not two
    const third = documents.resolve(urls[2]!);
    const fourth = await refusal(documents.resolve(urls[3]!));
    expect(fourth.reason).toBe('busy');
    expect(fourth.message).toBe(
      `Too many client metadata documents are being fetched; try again shortly (${urls[3]}).`,
    );
    await release(urls[1]!);
    await release(urls[2]!);
    expect((await second).clientId).toBe(urls[1]);
    expect((await third).clientId).toBe(urls[2]);
    await documents.close();
  });
});
