// The heavy dependencies, loaded on first use rather than when portico is imported: `jose`
// (JWT work), `ws` (the WebSocket server) and `undici` (the webhook sender's agent) together
// took most of `import('portico')`'s cold time. Each loader caches its module; once loaded,
// `loaded*()` hands it over without a microtask, for the hot paths.
type Jose = typeof import('jose');
type Ws = typeof import('ws');
type Undici = typeof import('undici');

let jose: Jose | undefined;
let joseLoading: Promise<Jose> | undefined;
let ws: Ws | undefined;
let wsLoading: Promise<Ws> | undefined;
let undici: Undici | undefined;
let undiciLoading: Promise<Undici> | undefined;

/** `jose`, loaded once. */
export function loadJose(): Promise<Jose> {
  joseLoading ??= import('jose').then((module) => (jose = module));
  return joseLoading;
}

/** `jose` if it is loaded already. */
export const loadedJose = (): Jose | undefined => jose;

/** `ws`, loaded once. */
export function loadWs(): Promise<Ws> {
  wsLoading ??= import('ws').then((module) => (ws = module));
  return wsLoading;
}

/** `ws` if it is loaded already. */
export const loadedWs = (): Ws | undefined => ws;

/** `undici`, loaded once. */
export function loadUndici(): Promise<Undici> {
  undiciLoading ??= import('undici').then((module) => (undici = module));
  return undiciLoading;
}

/** `undici` if it is loaded already. */
export const loadedUndici = (): Undici | undefined => undici;
