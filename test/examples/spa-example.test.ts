// examples/spa/server.ts without a browser (test/examples/browser.test.ts drives it in
// Chromium): the files it serves, and the policy that lets the page reach the service only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpa } from '../../examples/spa/server.js';
import { json, type Listening, listen, request } from '../helpers/http.js';

describe('the SPA example’s server', () => {
  let spa: ReturnType<typeof createSpa>;
  let listening: Listening;

  beforeAll(async () => {
    spa = createSpa({ api: 'http://127.0.0.1:3999/ignored/path' });
    listening = await listen(spa.server);
  });
  afterAll(() => spa.close());

  it('serves the page at / and at /callback, with a policy naming the service', async () => {
    for (const path of ['/', '/callback']) {
      const reply = await request(listening, `${path}?code=x&state=y`);
      expect(reply.status).toBe(200);
      expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(reply.body).toContain('<script type="module" src="/spa.js"></script>');
      const csp = String(reply.headers['content-security-policy']);
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self' http://127.0.0.1:3999 ws://127.0.0.1:3999");
      expect(csp).not.toContain('unsafe-inline');
    }
  });

  it('tells the page where the service is, and serves its scripts', async () => {
    expect(json(await request(listening, '/config.json'))).toEqual({
      api: 'http://127.0.0.1:3999',
    });
    for (const [path, type] of [
      ['/spa.js', 'text/javascript; charset=utf-8'],
      ['/live.js', 'text/javascript; charset=utf-8'],
      ['/style.css', 'text/css; charset=utf-8'],
    ]) {
      const reply = await request(listening, path!);
      expect(reply.status).toBe(200);
      expect(reply.headers['content-type']).toBe(type);
      expect(reply.headers['cache-control']).toBe('no-cache');
    }
  });

  it('answers anything else with a problem', async () => {
    const missing = await request(listening, '/nowhere');
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('application/problem+json');
    const post = await request(listening, '/', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toMatch(/GET/);
  });
});
