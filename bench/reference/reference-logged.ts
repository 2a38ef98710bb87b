/**
 * The reference server with its default `LOG_LEVEL=info`: one pino access-log line per
 * request on stdout (a pipe to the harness, as a container's log driver reads it).
 */
import { serveReference } from './reference-app.js';

await serveReference('info');
