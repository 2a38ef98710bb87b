// The client metadata document resolver over real https on loopback (a test CA made with
// openssl): what it accepts, each refusal, the cache, and the address guard (SSRF).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClientMetadataDocumentError,
  type ClientMetadataDocumentOptions,
  createClientMetadataDocuments,
} from '../../../src/oauth/index.js';
import { requireOpenssl } from '../../helpers/tools.js';
import {
  type DocumentServer,
  loopback,
  makeTestTls,
  startDocumentServer,
  type TestTls,
} from './document-server.js';

const hasOpenssl = requireOpenssl();

let tls: TestTls;
let docs: DocumentServer;
let seq = 0;

const documentOf = (url: string) => ({
  client_id: url,
  client_name: 'Agent Example',
  redirect_uris: ['http://127.0.0.1:3000/callback'],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  scope: 'openid profile',
});

/** A fresh path each time: the resolvers of different tests never share a URL. */
const path = (name: string) => `/${name}-${++seq}/client.json`;

const resolver = (options: ClientMetadataDocumentOptions = {}) =>
  createClientMetadataDocuments({ allowPrivate: true, ca: tls.ca, lookup: loopback, ...options });

async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ClientMetadataDocumentError);
  const refused = error as ClientMetadataDocumentError;
  expect(refused.error).toBe('invalid_client');
  return refused;
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

describe.skipIf(!hasOpenssl)('createClientMetadataDocuments over https', () => {
  it('fetches a document and makes it a public client of provenance metadata-document', async () => {
    const url = docs.json(path('ok'), documentOf);
    let seen: Record<string, string | string[] | undefined> = {};
    const inner = docs.routes.get(new URL(url).pathname)!;
    docs.routes.set(new URL(url).pathname, (req, res) => {
      seen = req.headers;
      inner(req, res);
    });
    const documents = resolver();
    expect(documents.handles(url)).toBe(true);
    expect(documents.handles('demo-web')).toBe(false);
    const client = await documents.resolve(url);
    expect(client).toEqual({
      clientId: url,
      name: 'Agent Example',
      redirectUris: ['http://127.0.0.1:3000/callback'],
      grantTypes: ['authorization_code', 'refresh_token'],
      scopes: ['openid', 'profile'],
      provenance: 'metadata-document',
    });
    expect(Object.isFrozen(client)).toBe(true);
    expect(seen.accept).toBe('application/json');
    await documents.close();
  });

  it('takes private_key_jwt with a jwks_uri at its own origin, and the server scopes by default', async () => {
    const url = docs.json(path('keys'), (u) => {
      const { scope: _scope, ...doc } = documentOf(u);
      return {
        ...doc,
        token_endpoint_auth_method: 'private_key_jwt',
        jwks_uri: `${new URL(u).origin}/jwks.json`,
      };
    });
    const client = await resolver({ scopes: ['openid', 'read'] }).resolve(url);
    expect(client.jwksUri).toBe(`${new URL(url).origin}/jwks.json`);
    expect(client.scopes).toEqual(['openid', 'read']);
  });

  it.each<[string, (url: string) => unknown, string, RegExp]>([
    [
      'lies about its client_id',
      (u) => ({ ...documentOf(u), client_id: 'https://other.example/client.json' }),
      'invalid-document',
      /names another client_id/,
    ],
    [
      'has no redirect_uris',
      (u) => ({ ...documentOf(u), redirect_uris: [] }),
      'invalid-document',
      /redirect_uris/,
    ],
    [
      'carries a client_secret',
      (u) => ({ ...documentOf(u), client_secret: 'hunter22hunter22' }),
      'invalid-document',
      /client secret/,
    ],
    [
      'carries a client_secret_expires_at',
      (u) => ({ ...documentOf(u), client_secret_expires_at: 0 }),
      'invalid-document',
      /client secret/,
    ],
    [
      'asks for client_secret_basic',
      (u) => ({ ...documentOf(u), token_endpoint_auth_method: 'client_secret_basic' }),
      'invalid-document',
      /token_endpoint_auth_method/,
    ],
    [
      'says no token_endpoint_auth_method',
      (u) => {
        const { token_endpoint_auth_method: _m, ...doc } = documentOf(u);
        return doc;
      },
      'invalid-document',
      /token_endpoint_auth_method/,
    ],
    [
      'asks for private_key_jwt without a jwks_uri',
      (u) => ({ ...documentOf(u), token_endpoint_auth_method: 'private_key_jwt' }),
      'invalid-document',
      /jwks_uri/,
    ],
    [
      'puts its jwks_uri at another origin',
      (u) => ({
        ...documentOf(u),
        token_endpoint_auth_method: 'private_key_jwt',
        jwks_uri: 'https://169.254.169.254/latest/meta-data',
      }),
      'invalid-document',
      /own origin/,
    ],
    [
      'asks for client_credentials',
      (u) => ({ ...documentOf(u), grant_types: ['client_credentials'] }),
      'invalid-document',
      /grant types/,
    ],
    [
      'asks for a scope the server does not give',
      (u) => ({ ...documentOf(u), scope: 'openid admin' }),
      'invalid-document',
      /"admin"/,
    ],
    [
      'asks for the token response type',
      (u) => ({ ...documentOf(u), response_types: ['token'] }),
      'invalid-document',
      /response type/,
    ],
    [
      'has a javascript: redirect URI',
      (u) => ({ ...documentOf(u), redirect_uris: ['javascript:alert(1)'] }),
      'invalid-document',
      /redirect_uris/,
    ],
    [
      'has a client_name with a control character',
      (u) => ({ ...documentOf(u), client_name: 'Agent\u202eelgooG' }),
      'invalid-document',
      /client_name/,
    ],
    ['is a JSON array', () => [1, 2], 'not-json', /not a JSON object/],
  ])('refuses a document that %s', async (_, doc, reason, message) => {
    const url = docs.json(path('bad'), doc);
    const refused = await refusal(resolver().resolve(url));
    expect(refused.reason).toBe(reason);
    expect(refused.message).toMatch(message);
    expect(refused.message).toContain(url);
  });

  it('refuses a body that is not JSON', async () => {
    const p = path('text');
    docs.routes.set(p, (_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>'),
    );
    const refused = await refusal(resolver().resolve(`${docs.origin}${p}`));
    expect(refused.reason).toBe('not-json');
  });

  it('refuses a redirect without following it', async () => {
    const target = docs.json(path('target'), documentOf);
    const p = path('moved');
    docs.routes.set(p, (_req, res) => res.writeHead(302, { location: target }).end());
    const refused = await refusal(resolver().resolve(`${docs.origin}${p}`));
    expect(refused.reason).toBe('redirect');
    expect(refused.message).toMatch(/redirect, which is not followed/);
    expect(docs.hits.get(new URL(target).pathname)).toBeUndefined();
  });

  it('refuses another status', async () => {
    const refused = await refusal(resolver().resolve(`${docs.origin}${path('missing')}`));
    expect(refused.reason).toBe('status');
    expect(refused.message).toMatch(/HTTP 404/);
  });

  it('refuses a document larger than maxBytes, said by Content-Length or streamed', async () => {
    const big = docs.json(path('big'), (u) => ({ ...documentOf(u), padding: 'x'.repeat(6_000) }));
    expect((await refusal(resolver().resolve(big))).reason).toBe('too-large');
    // no Content-Length: chunks are counted as they come, the rest never read
    const p = path('stream');
    let written = 0;
    docs.routes.set(p, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => {
        if (res.destroyed || written > 1_000_000) {
          clearInterval(timer);
          res.end();
          return;
        }
        written += 1024;
        res.write(' '.repeat(1024));
      }, 1);
    });
    const refused = await refusal(resolver({ maxBytes: 2_048 }).resolve(`${docs.origin}${p}`));
    expect(refused.reason).toBe('too-large');
    expect(refused.message).toMatch(/larger than 2048 bytes/);
    expect(written).toBeLessThan(1_000_000);
  });

  it('bounds the whole fetch in time: a server that never answers, and one that trickles', async () => {
    const silent = path('silent');
    docs.routes.set(silent, () => {}); // never answers
    const started = Date.now();
    const refused = await refusal(
      resolver({ timeout: '300ms' }).resolve(`${docs.origin}${silent}`),
    );
    expect(refused.reason).toBe('timeout');
    expect(refused.message).toMatch(/longer than 300 ms/);
    const slowloris = path('slowloris');
    docs.routes.set(slowloris, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // a byte every 50 ms: never idle long enough for a per-read timeout
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(' ')), 50);
      res.on('close', () => clearInterval(timer));
    });
    const trickled = await refusal(
      resolver({ timeout: '400ms' }).resolve(`${docs.origin}${slowloris}`),
    );
    expect(trickled.reason).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('refuses a certificate it does not trust (the system roots without the test CA)', async () => {
    const url = docs.json(path('untrusted'), documentOf);
    const documents = createClientMetadataDocuments({ allowPrivate: true, lookup: loopback });
    expect((await refusal(documents.resolve(url))).reason).toBe('unreachable');
  });

  it.each([
    ['http://localhost/client.json', /must be an https: URL/],
    ['https://localhost', /with a path/],
    ['https://localhost/', /with a path/],
    ['https://localhost/a/../client.json', /normal form/],
    ['https://user:pw@localhost/client.json', /user name, password or fragment/],
    ['https://localhost/client.json#x', /user name, password or fragment/],
    ['HTTPS://LOCALHOST/client.json', /normal form/],
    [`https://localhost/${'a'.repeat(1100)}`, /not a usable URL/],
  ])('refuses the client id %s before any fetch', async (id, message) => {
    const refused = await refusal(resolver().resolve(id));
    expect(refused.reason).toBe('invalid-id');
    expect(refused.message).toMatch(message);
  });
});

describe.skipIf(!hasOpenssl)('the cache of documents', () => {
  it('keeps a document for its max-age: a second lookup does not fetch', async () => {
    const url = docs.json(path('cached'), documentOf, { 'cache-control': 'max-age=60' });
    const documents = resolver();
    const first = await documents.resolve(url);
    expect(await documents.resolve(url)).toBe(first);
    expect(docs.hits.get(new URL(url).pathname)).toBe(1);
  });

  it.each(['max-age=0', 'no-store', 'no-cache, max-age=60'])(
    'fetches again with %s',
    async (cc) => {
      const url = docs.json(path('uncached'), documentOf, { 'cache-control': cc });
      const documents = resolver();
      await documents.resolve(url);
      await documents.resolve(url);
      expect(docs.hits.get(new URL(url).pathname)).toBe(2);
    },
  );

  it('keeps a document no longer than maxAge, whatever it says', async () => {
    const url = docs.json(path('capped'), documentOf, { 'cache-control': 'max-age=999999' });
    const documents = resolver({ maxAge: '1s' });
    await documents.resolve(url);
    await documents.resolve(url);
    expect(docs.hits.get(new URL(url).pathname)).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await documents.resolve(url);
    expect(docs.hits.get(new URL(url).pathname)).toBe(2);
  });

  it('shares one fetch among concurrent lookups of one URL', async () => {
    const url = docs.json(path('shared'), documentOf, { 'cache-control': 'no-store' });
    const documents = resolver();
    const clients = await Promise.all([1, 2, 3, 4, 5].map(() => documents.resolve(url)));
    expect(new Set(clients).size).toBe(1);
    expect(docs.hits.get(new URL(url).pathname)).toBe(1);
  });

  it('is bounded: beyond maxEntries the oldest document is forgotten', async () => {
    const urls = [1, 2, 3].map(() => docs.json(path('bounded'), documentOf));
    const documents = resolver({ maxEntries: 2 });
    for (const url of urls) await documents.resolve(url);
    // the last two are kept, the first was evicted and is fetched again
    await documents.resolve(urls[2]!);
    await documents.resolve(urls[1]!);
    await documents.resolve(urls[0]!);
    expect(urls.map((u) => docs.hits.get(new URL(u).pathname))).toEqual([2, 1, 1]);
  });

  it('remembers a failure for failureMaxAge: requests naming it cannot make it fetch in a loop', async () => {
    const url = docs.json(path('failing'), (u) => ({
      ...documentOf(u),
      client_id: 'https://x.example/c',
    }));
    const documents = resolver({ failureMaxAge: '1s' });
    for (let i = 0; i < 5; i++) await refusal(documents.resolve(url));
    expect(docs.hits.get(new URL(url).pathname)).toBe(1);
    const forgetting = resolver({ failureMaxAge: 0 });
    await refusal(forgetting.resolve(url));
    await refusal(forgetting.resolve(url));
    expect(docs.hits.get(new URL(url).pathname)).toBe(3);
  });

  it('fetches at most 2 documents of one host at once: more fail at once, not queued', async () => {
    const held: (() => void)[] = [];
    let holding = true;
    const urls = [1, 2, 3].map(() => {
      const p = path('held');
      docs.routes.set(p, (_req, res) => {
        const answer = () =>
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify(documentOf(`${docs.origin}${p}`)));
        if (holding) held.push(answer);
        else answer();
      });
      return `${docs.origin}${p}`;
    });
    const documents = resolver({ failureMaxAge: 0 });
    const first = documents.resolve(urls[0]!);
    const second = documents.resolve(urls[1]!);
    const third = await refusal(documents.resolve(urls[2]!));
    expect(third.reason).toBe('busy');
    while (held.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    holding = false;
    for (const release of held) release();
    expect((await first).clientId).toBe(urls[0]);
    expect((await second).clientId).toBe(urls[1]);
    expect((await documents.resolve(urls[2]!)).clientId).toBe(urls[2]);
  });
});

describe.skipIf(!hasOpenssl)('the address guard (SSRF)', () => {
  const guarded = (lookup: ClientMetadataDocumentOptions['lookup']) =>
    createClientMetadataDocuments({ ca: tls.ca, ...(lookup && { lookup }) });

  it.each([
    ['169.254.169.254', 'https://169.254.169.254/latest/meta-data/client.json'],
    ['10.0.0.1', 'https://10.0.0.1/client.json'],
    ['::1', 'https://[::1]/client.json'],
    ['127.0.0.1', 'https://127.0.0.1/client.json'],
  ])('refuses the address literal %s without allowPrivate', async (_, url) => {
    const refused = await refusal(guarded(undefined).resolve(url));
    expect(refused.reason).toBe('address');
    expect(refused.message).toMatch(/loopback, private or link-local/);
  });

  it.each([
    ['169.254.169.254', 4],
    ['10.1.2.3', 4],
    ['::1', 6],
    ['fd00::1', 6],
  ] as const)(
    'refuses a host name resolving to %s (DNS answers checked)',
    async (address, family) => {
      const asked: string[] = [];
      const lookup = async (host: string) => {
        asked.push(host);
        return [{ address, family }];
      };
      const refused = await refusal(
        guarded(lookup).resolve('https://docs.example.test/client.json'),
      );
      expect(refused.reason).toBe('address');
      expect(asked).toContain('docs.example.test');
      expect(refused.message).not.toContain(address);
    },
  );

  it('refuses a name with one public and one private answer', async () => {
    const lookup = async () => [
      { address: '93.184.215.14', family: 4 as const },
      { address: '127.0.0.1', family: 4 as const },
    ];
    expect(
      (await refusal(guarded(lookup).resolve('https://docs.example.test/c.json'))).reason,
    ).toBe('address');
  });

  it('refuses a name that does not resolve', async () => {
    const lookup = async () => {
      throw new Error('ENOTFOUND');
    };
    const refused = await refusal(guarded(lookup).resolve('https://nowhere.example.test/c.json'));
    expect(refused.reason).toBe('address');
    expect(refused.message).toMatch(/does not resolve/);
  });

  it('fetches from loopback with allowPrivate, through the same checked lookup', async () => {
    const url = docs.json(path('named'), documentOf).replace('localhost', 'docs.example.test');
    docs.json(new URL(url).pathname, () => documentOf(url));
    const client = await resolver().resolve(url);
    expect(client.clientId).toBe(url);
  });
});

describe('createClientMetadataDocuments options', () => {
  it.each<[string, unknown, RegExp]>([
    ['a typo', { timout: 1_000 }, /Did you mean `timeout`/],
    ['a maxAge over 24 hours', { maxAge: '25h' }, /maxAge/],
    ['a timeout that looks like seconds', { timeout: 5 }, /looks like seconds/],
    ['a zero maxEntries', { maxEntries: 0 }, /maxEntries/],
    ['a non-boolean allowPrivate', { allowPrivate: 'yes' }, /allowPrivate/],
    ['scopes that are not scopes', { scopes: ['a b'] }, /scopes/],
    ['a lookup that is not a function', { lookup: 'dns' }, /lookup/],
    ['a ca that is a number', { ca: 42 }, /ca/],
  ])('refuses %s', (_, options, message) => {
    expect(() => createClientMetadataDocuments(options as ClientMetadataDocumentOptions)).toThrow(
      message,
    );
  });
});

describe.skipIf(!hasOpenssl)('Cache-Control and Content-Length of a document', () => {
  /** How many times the document is fetched over two lookups, served with `cc`. */
  async function fetchesWith(cc: string | string[] | undefined): Promise<number> {
    const p = path('cc');
    docs.routes.set(p, (_req, res) => {
      if (cc !== undefined) res.setHeader('cache-control', cc);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(documentOf(`${docs.origin}${p}`)));
    });
    const documents = resolver();
    await documents.resolve(`${docs.origin}${p}`);
    await documents.resolve(`${docs.origin}${p}`);
    return docs.hits.get(p) ?? 0;
  }

  it.each([
    [undefined, 1],
    ['MAX-AGE=60', 1],
    ['max-age="60"', 1],
    ['public,  no-store', 2],
    [['public', 'no-cache'], 2],
    ['max-age=-5', 2],
    ['max-age=Infinity', 2],
    ['max-age=soon', 2],
    ['max-age', 2],
  ] as const)('Cache-Control %j: %i fetches for two lookups', async (cc, fetches) => {
    expect(await fetchesWith(cc as string | string[] | undefined)).toBe(fetches);
  });

  it('refuses a document whose Content-Length says it is larger than maxBytes, and takes one of exactly maxBytes', async () => {
    const p = path('sized');
    let body = '';
    docs.routes.set(p, (_req, res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    });
    const url = `${docs.origin}${p}`;
    const doc = JSON.stringify(documentOf(url));
    body = doc;
    const exact = Buffer.byteLength(doc);
    expect((await resolver({ maxBytes: exact }).resolve(url)).clientId).toBe(url);
    const refused = await refusal(resolver({ maxBytes: exact - 1 }).resolve(url));
    expect(refused.reason).toBe('too-large');
    expect(refused.message).toBe(
      `The metadata document of ${url} is larger than ${exact - 1} bytes.`,
    );
  });

  it('abandons a body its Content-Length refuses, whole or still to come: nothing crashes', async () => {
    // undici reports an abandoned body as an abort, an `error` event on it: the resolver hears
    // it (unheard, it is an uncaught exception that ends the process). Whole: the body came
    // with the headers; to come: only the headers came, the connection is closed.
    const whole = docs.json(path('whole'), (u) => ({ ...documentOf(u), padding: 'x'.repeat(100) }));
    expect((await refusal(resolver({ maxBytes: 64 }).resolve(whole))).reason).toBe('too-large');
    const p = path('announced');
    const closed = new Promise<void>((resolve) => {
      docs.routes.set(p, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': 1_000_000 });
        res.flushHeaders();
        res.once('close', () => resolve());
      });
    });
    const refused = await refusal(resolver({ maxBytes: 2_048 }).resolve(`${docs.origin}${p}`));
    expect(refused.reason).toBe('too-large');
    await closed;
    // the abort is reported on the next turns of the event loop: give it the time to
    await new Promise((resolve) => setTimeout(resolve, 50));
  });

  it('fetches at most 32 documents at once in all: the next fails at once as busy', async () => {
    // a server that takes connections and never answers: every fetch stays in flight
    const { createServer } = await import('node:net');
    const sockets = new Set<import('node:net').Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as import('node:net').AddressInfo;
    try {
      const documents = resolver({ timeout: '2s', failureMaxAge: 0 });
      const inFlight = Array.from({ length: 32 }, (_, i) =>
        documents.resolve(`https://host${i}.example:${port}/client.json`).catch((e: unknown) => e),
      );
      const busy = await refusal(documents.resolve(`https://host32.example:${port}/client.json`));
      expect(busy.reason).toBe('busy');
      expect(busy.message).toBe(
        `Too many client metadata documents are being fetched; try again shortly (https://host32.example:${port}/client.json).`,
      );
      for (const result of await Promise.all(inFlight)) {
        expect((result as ClientMetadataDocumentError).reason).toBe('timeout');
      }
      await documents.close();
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
