/**
 * The body every server of the `compression` comparison sends: a ~20 KB JSON list, the same
 * bytes from each (each server calls `JSON.stringify` per request, as an app would).
 */
export const PATH = '/api/items';

const items = Array.from({ length: 160 }, (_, i) => ({
  id: i + 1,
  sku: `SKU-${String(100_000 + i * 7919).slice(-6)}`,
  name: `Item number ${i + 1}`,
  price: Math.round(((i * 37) % 1000) * 1.25) / 100,
  tags: ['portable', i % 2 === 0 ? 'even' : 'odd', `batch-${i % 9}`],
  inStock: i % 3 !== 0,
}));

/** The value to send. */
export function payload(): unknown {
  return { items, total: items.length };
}
