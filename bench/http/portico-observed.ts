/**
 * portico's app (bench/http/portico-app.ts) with a subscriber on every diagnostics channel:
 * each listener does nothing, so the row prices publishing itself (the `request`
 * TracingChannel's five events per request, and the others' checks), against the `portico`
 * row where nobody listens.
 */
import { subscribe, tracingChannel } from 'node:diagnostics_channel';
import { createServer } from 'node:http';
import { serve } from '../lib/serve.js';
import { porticoListener } from './portico-app.js';

const dist = new URL('../../dist/diagnostics.js', import.meta.url).href;
const { channels } = (await import(dist)) as typeof import('../../src/diagnostics/index.js');

const nothing = () => {};
const { request, ...plain } = channels;
tracingChannel(request).subscribe({
  start: nothing,
  end: nothing,
  asyncStart: nothing,
  asyncEnd: nothing,
  error: nothing,
});
for (const name of Object.values(plain)) subscribe(name, nothing);

serve(createServer(porticoListener()));
