// Writes docs/exports.md: every entry point and its runtime exports (test/internal/exports.test.ts
// checks it). Run: node --import tsx scripts/exports-table.ts
import { writeFileSync } from 'node:fs';

const root = new URL('../', import.meta.url).pathname;
const SUBPATHS: [string, string, string][] = [
  [
    'portico',
    'src/index.ts',
    'What a service is built from: the factories, errors, body readers and senders, adapters.',
  ],
  [
    'portico/core',
    'src/core/index.ts',
    'Middleware, context, the error hierarchy and Problem Details.',
  ],
  [
    'portico/http',
    'src/http/index.ts',
    'Bodies, routing, conditional requests, request ids, security headers, HTTPS and proxies.',
  ],
  ['portico/cors', 'src/cors/index.ts', 'CORS.'],
  ['portico/rate-limit', 'src/rate-limit/index.ts', 'Rate limits and their stores.'],
  [
    'portico/auth',
    'src/auth/index.ts',
    'Authenticators, the credential guard, sessions, API keys, revocations.',
  ],
  ['portico/oauth', 'src/oauth/index.ts', 'The OAuth 2.0 / OpenID Connect authorization server.'],
  ['portico/ws', 'src/ws/index.ts', 'The WebSocket upgrade and the channel protocol.'],
  ['portico/sse', 'src/sse/index.ts', 'Server-Sent Events.'],
  ['portico/realtime', 'src/realtime/index.ts', 'The channel hub and its brokers.'],
  ['portico/webhook', 'src/webhook/index.ts', 'Webhook sending and receiving.'],
  ['portico/redis', 'src/redis/index.ts', 'Redis stores and broker (needs `ioredis`).'],
  [
    'portico/diagnostics',
    'src/diagnostics/index.ts',
    'The logger interface, the diagnostics channels, the W3C trace context.',
  ],
  [
    'portico/client',
    'src/client/index.ts',
    "The application's side of OAuth: sign-in at upstream providers (needs `openid-client`).",
  ],
  [
    'portico/node',
    'src/adapters/node.ts',
    "The node:http adapter, and `serve`: a service's start and graceful stop.",
  ],
  ['portico/express', 'src/adapters/express.ts', 'The Express adapter.'],
  ['portico/koa', 'src/adapters/koa.ts', 'The Koa adapter.'],
  ['portico/fastify', 'src/adapters/fastify.ts', 'The Fastify adapter.'],
  [
    'portico/fetch',
    'src/adapters/fetch/index.ts',
    'The Fetch adapter: a Web `Request` in, a `Response` out (Next.js route handlers, Bun, Deno).',
  ],
  ['portico/hono', 'src/adapters/hono.ts', 'The Hono adapter.'],
  [
    'portico/nest',
    'src/adapters/nest.ts',
    'The NestJS module, guard, decorators and exception filter (needs `@nestjs/common`, `@nestjs/core`).',
  ],
];
const lines = [
  '# Exports',
  '',
  'Every entry point of the package and the runtime values it exports (types are exported beside',
  'the values they describe). `portico` holds what a service is built from; each subpath holds its',
  'concern whole, so a name found in the root is also found in its subpath. `test/internal/exports.test.ts`',
  'keeps this table true.',
  '',
  '| import from | what it holds | runtime exports |',
  '|---|---|---|',
];
for (const [spec, file, what] of SUBPATHS) {
  const mod = await import(`${root}${file}`);
  const names = Object.keys(mod).sort((a, b) => a.localeCompare(b));
  lines.push(`| \`${spec}\` | ${what} | ${names.map((n) => `\`${n}\``).join(', ')} |`);
}
writeFileSync(`${root}docs/exports.md`, `${lines.join('\n')}\n`);
console.log('written');
