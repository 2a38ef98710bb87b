// The demo credentials of examples/node-http, examples/express and examples/koa: the same small
// API on three hosts. Demo only: never use a published key or secret for real.

/** The browser origin allowed: for CORS, and for the WebSocket `Origin` check. */
export const ORIGIN = 'http://localhost:5173';

/** The API key the demo accepts (send it as `X-API-Key`). */
export const DEMO_API_KEY = 'demo-frameworks-key-0123456789abcdef';

/** The HS256 secret bearer tokens are signed with (at least 32 bytes), and their `iss` / `aud`. */
export const DEMO_JWT_SECRET = 'demo-frameworks-secret-0123456789abcdef';
export const ISSUER = 'https://id.example.com';
export const AUDIENCE = 'https://api.example.com';
