/** portico, its event loop blocked periodically, `shedLoad()` first in the chain. */
import { serveBlocked } from './app.js';

serveBlocked(true);
