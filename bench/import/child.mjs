// One cold import: `node bench/import/child.mjs [specifier]` times `await import(specifier)`
// (nothing, without one) with performance.now() and prints `{ "ms", "exports" }` as one JSON
// line. Plain JavaScript run by plain node, so no loader hook (tsx) takes part in the import.
const specifier = process.argv[2];
const start = performance.now();
const namespace = await (specifier === undefined ? undefined : import(specifier));
const ms = performance.now() - start;
const exports = namespace === undefined ? 0 : Object.keys(namespace).length;
process.stdout.write(`${JSON.stringify({ ms, exports })}\n`);
