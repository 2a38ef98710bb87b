// maintenanceMode, shedLoad, healthChecks and the language helpers through node:http,
// Express 5, Koa 3 and Fastify 5: the same statuses, headers and problems on every host.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Middleware } from '../../src/core/compose.js';
import { sendJson } from '../../src/core/send.js';
import { healthChecks } from '../../src/http/health.js';
import { shedLoad } from '../../src/http/load-shedding.js';
import { maintenanceMode } from '../../src/http/maintenance.js';
import { negotiateLanguage, setContentLanguage } from '../../src/http/representation/language.js';
import { createRouter, mount } from '../../src/http/routing/router.js';
import { hostOnEveryAdapter, requestBytes } from '../helpers/adapters.js';
import { closeAll, type Listening } from '../helpers/http.js';

const maintenance = maintenanceMode({ retryAfter: 30_000 });
const shedders: ReturnType<typeof shedLoad>[] = [];
let hosts: Record<string, Listening> = {};
let close: () => Promise<void>;

const hello: Middleware = (req, res) => {
  const language = negotiateLanguage(req.headers['accept-language'], ['en', 'fr'], 'en');
  setContentLanguage(res, language);
  sendJson(res, 200, { hello: language === 'fr' ? 'bonjour' : 'hello' });
};

beforeAll(async () => {
  ({ hosts, close } = await hostOnEveryAdapter(() => {
    const health = healthChecks({ checks: { store: () => true }, maintenance });
    const shed = shedLoad({ maxInFlight: 1_000 });
    shedders.push(shed);
    return [
      mount('/api', maintenance),
      mount('/api', shed),
      createRouter({
        '/api/hello': { GET: hello },
        '/healthz': { GET: health.liveness },
        '/readyz': { GET: health.readiness },
      }),
    ];
  }));
});
afterAll(async () => {
  for (const shed of shedders) shed.close();
  await closeAll();
  await close();
});

const names = ['node:http', 'express 5', 'koa 3', 'fastify 5', 'fetch', 'hono 4'];

describe.each(names)('on %s', (name) => {
  it('negotiates the language, with Content-Language and Vary', async () => {
    const reply = await requestBytes(hosts[name]!, '/api/hello', {
      'Accept-Language': 'fr-CA,fr;q=0.9,en;q=0.5',
    });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-language']).toBe('fr');
    expect(reply.headers.vary).toMatch(/Accept-Language/);
    expect(JSON.parse(reply.body.toString())).toEqual({ hello: 'bonjour' });
  });

  it('answers health, and 503 problems with Retry-After in maintenance', async () => {
    expect((await requestBytes(hosts[name]!, '/healthz')).status).toBe(200);
    expect((await requestBytes(hosts[name]!, '/readyz')).status).toBe(200);
    maintenance.enable();
    try {
      const refused = await requestBytes(hosts[name]!, '/api/hello');
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('30');
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(refused.body.toString())).toMatchObject({ status: 503 });
      const notReady = await requestBytes(hosts[name]!, '/readyz');
      expect(notReady.status).toBe(503);
      expect(JSON.parse(notReady.body.toString())).toMatchObject({ checks: { store: 'ok' } });
      expect((await requestBytes(hosts[name]!, '/healthz')).status).toBe(200);
    } finally {
      maintenance.disable();
    }
    expect((await requestBytes(hosts[name]!, '/api/hello')).status).toBe(200);
  });
});
