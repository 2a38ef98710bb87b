import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = fileURLToPath(new URL('./src/', import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^portico$/, replacement: `${src}index.ts` },
      {
        find: /^portico\/(node|express|koa|fastify|hono|nest)$/,
        replacement: `${src}adapters/$1.ts`,
      },
      { find: /^portico\/fetch$/, replacement: `${src}adapters/fetch/index.ts` },
      { find: /^portico\/(.*)$/, replacement: `${src}$1/index.ts` },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/helpers/fast-check-seed.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
  },
});
