/** The reference server as it ships: bearer tokens verified with its verified-token cache (the default). */
import { serveReference } from './reference-app.js';

await serveReference();
