// Preloaded into every code block the docs test runs: each server the block starts listens on
// a free port instead of the one it names, and the pair (named, real) is appended as a JSON
// line to the file PORTICO_DOCS_PORTS, from which the test rewrites the block's curl commands.
import { appendFileSync } from 'node:fs';
import net from 'node:net';

const report = process.env.PORTICO_DOCS_PORTS;
const assigned = new Set();
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function (...args) {
  let named;
  const [first] = args;
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    named = Number(first);
    if (!assigned.has(named)) args[0] = 0;
  } else if (first && typeof first === 'object' && 'port' in first) {
    named = Number(first.port);
    if (!assigned.has(named)) args[0] = { ...first, port: 0 };
  }
  if (named !== undefined && report) {
    this.once('listening', () => {
      const address = this.address();
      if (!address || typeof address === 'string') return;
      assigned.add(address.port);
      if (named !== address.port) {
        appendFileSync(report, `${JSON.stringify({ named, port: address.port })}\n`);
      }
    });
  }
  return listen.apply(this, args);
};
