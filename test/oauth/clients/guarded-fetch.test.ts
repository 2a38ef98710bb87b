// The fetch of a self-described client's keys (clients/guarded-fetch.ts) over real https on
// loopback (a test CA made with openssl): the address guard, the TLS trust, the lookup it is
// given, redirects answered rather than followed; the lazy agent made on first use, closed and
// made again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadUndici } from '../../../src/internal/lazy.js';
import { guardedKeysFetch, lazyGuardedAgent } from '../../../src/oauth/clients/guarded-fetch.js';
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
const KEYS = { keys: [{ kty: 'EC', crv: 'P-256', x: 'eA', y: 'eQ' }] };
const looked: string[] = [];
/** Every name resolves to loopback, each name looked up noted. */
const lookup = async (host: string) => {
  looked.push(host);
  return loopback(host);
};
const init = { headers: { accept: 'application/json' } };

/** The cause of a rejected fetch (undici wraps it in `fetch failed`). */
async function failure(promise: Promise<unknown>): Promise<unknown> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  return (error as Error).cause ?? error;
}

beforeAll(async () => {
  if (!hasOpenssl) return;
  tls = makeTestTls();
  docs = await startDocumentServer(tls);
  docs.json('/jwks.json', () => KEYS);
  docs.routes.set('/moved', (_req, res) => {
    res.writeHead(302, { location: `${docs.origin}/jwks.json` }).end();
  });
});

afterAll(async () => {
  await docs?.close();
});

describe.runIf(hasOpenssl)('guardedKeysFetch()', () => {
  it('fetches keys through the lookup it is given, trusting the CA it is given, again and again', async () => {
    const fetchKeys = guardedKeysFetch({ allowPrivate: true, lookup, ca: tls.ca });
    looked.length = 0;
    for (let i = 0; i < 2; i++) {
      const res = await fetchKeys(`${docs.origin}/jwks.json`, init);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(KEYS);
    }
    expect(looked).toContain('localhost');
  });

  it('answers a redirect as it is, without following it', async () => {
    const fetchKeys = guardedKeysFetch({ allowPrivate: true, lookup, ca: tls.ca });
    const hits = docs.hits.get('/jwks.json') ?? 0;
    const res = await fetchKeys(`${docs.origin}/moved`, init);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`${docs.origin}/jwks.json`);
    expect(docs.hits.get('/jwks.json') ?? 0).toBe(hits);
  });

  it('refuses a loopback address unless allowPrivate, and sends nothing', async () => {
    const hits = docs.hits.get('/jwks.json') ?? 0;
    for (const options of [{}, { allowPrivate: false }]) {
      const fetchKeys = guardedKeysFetch({ ...options, lookup, ca: tls.ca });
      const cause = await failure(fetchKeys(`${docs.origin}/jwks.json`, init));
      expect((cause as Error).name).toBe('WebhookAddressError');
    }
    expect(docs.hits.get('/jwks.json') ?? 0).toBe(hits);
  });

  it('does not trust the test CA unless given it', async () => {
    const fetchKeys = guardedKeysFetch({ allowPrivate: true, lookup });
    const cause = await failure(fetchKeys(`${docs.origin}/jwks.json`, init));
    expect(String((cause as { code?: string }).code ?? cause)).toMatch(/CERT|SELF_SIGNED|UNABLE/i);
  });

  it('looks names up with dns.lookup when given no lookup (localhost is loopback: refused)', async () => {
    const fetchKeys = guardedKeysFetch({ ca: tls.ca });
    const cause = await failure(fetchKeys(`${docs.origin}/jwks.json`, init));
    expect((cause as Error).name).toBe('WebhookAddressError');
    looked.length = 0;
    const allowed = guardedKeysFetch({ allowPrivate: true, ca: tls.ca });
    expect((await allowed(`${docs.origin}/jwks.json`, init)).status).toBe(200);
    expect(looked).toEqual([]);
  });
});

describe.runIf(hasOpenssl)('lazyGuardedAgent()', () => {
  it('makes its agent on first use, once; closes it, and makes another when used again', async () => {
    const undici = await loadUndici();
    const lazy = lazyGuardedAgent(
      { allowPrivate: true, lookup, ca: tls.ca },
      { connectTimeoutMs: 5_000, connections: 2 },
    );
    const status = async (dispatcher: unknown) =>
      (await undici.fetch(`${docs.origin}/jwks.json`, { dispatcher } as never)).status;
    // nothing made yet: nothing to close
    await expect(lazy.close()).resolves.toBeUndefined();
    const first = await lazy.get();
    expect(await lazy.get()).toBe(first);
    expect(await status(first)).toBe(200);
    await lazy.close();
    expect((first as unknown as { closed: boolean }).closed).toBe(true);
    const cause = await failure(status(first));
    // undici refuses any request of an agent closed (this version names it destroyed)
    expect((cause as Error).name).toMatch(/^Client(Closed|Destroyed)Error$/);
    const second = await lazy.get();
    expect(second).not.toBe(first);
    expect(await status(second)).toBe(200);
    await lazy.close();
    await expect(lazy.close()).resolves.toBeUndefined();
    expect((second as unknown as { closed: boolean }).closed).toBe(true);
  });
});
