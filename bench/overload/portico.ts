/** portico, its event loop blocked periodically, no load shedding. */
import { serveBlocked } from './app.js';

serveBlocked(false);
