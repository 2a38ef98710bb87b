/** portico's app (bench/http/portico-app.ts), nobody subscribed to its diagnostics channels. */
import { createServer } from 'node:http';
import { serve } from '../lib/serve.js';
import { porticoListener } from './portico-app.js';

serve(createServer(porticoListener()));
