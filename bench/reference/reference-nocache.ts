/**
 * The reference server with its bearer verification's token cache off: every request checks
 * the access token's RS256 signature. The reference server has no setting for it, so this
 * process resolves `portico`, for the modules of examples/reference-server only, to
 * `portico-jwt-nocache.ts` (the package, with `createAuthorizationServer`'s `bearer` built
 * with `cache: false`); the server is otherwise the same as the `reference` rows'.
 */
import { register } from 'node:module';

/** A resolve hook: `portico` imported from under `scope` is `shim`. */
const HOOKS = `
let scope;
let shim;
export function initialize(data) {
  scope = data.scope;
  shim = data.shim;
}
export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'portico' && context.parentURL?.startsWith(scope)) {
    return nextResolve(shim, context); // tsx's resolver next: it loads TypeScript
  }
  return nextResolve(specifier, context);
}
`;

register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, {
  data: {
    scope: new URL('../../examples/reference-server/', import.meta.url).href,
    shim: new URL('./portico-jwt-nocache.ts', import.meta.url).href,
  },
});

// Loaded once the hook is in place: the reference server's modules get the shim.
const { serveReference } = await import('./reference-app.js');
await serveReference();
