// The heavy dependencies, loaded on first use rather than when portico is imported: `jose`
// (JWT work), `ws` (the WebSocket server) and `undici` (the webhook sender's agent) together
// took most of `import('portico')`'s cold time. Each loader caches its module; once loaded,
// `loaded*()` hands it over without a microtask, for the hot paths.

/** A module loaded once, on the first `load()`; `loaded()` has it once that has settled. */
function lazily<T>(importModule: () => Promise<T>): {
  load(): Promise<T>;
  loaded(): T | undefined;
} {
  let module: T | undefined;
  let loading: Promise<T> | undefined;
  return {
    load() {
      loading ??= importModule().then((loaded) => (module = loaded));
      return loading;
    },
    loaded: () => module,
  };
}

const jose = lazily(() => import('jose'));
/** `jose`, loaded once. */
export const loadJose = jose.load;
/** `jose` if it is loaded already. */
export const loadedJose = jose.loaded;

const ws = lazily(() => import('ws'));
/** `ws`, loaded once. */
export const loadWs = ws.load;
/** `ws` if it is loaded already. */
export const loadedWs = ws.loaded;

/** `undici`, loaded once (the webhook sender's first delivery). */
export const loadUndici = lazily(() => import('undici')).load;
