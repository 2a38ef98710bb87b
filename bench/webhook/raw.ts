/**
 * The floor: a plain loop POSTing the same JSON bodies portico sends (unsigned) with
 * `undici.request` through one keep-alive `undici.Agent`, at most C requests in flight, each
 * answer's body dumped.
 */
import { Agent, request } from 'undici';
import { runSender } from '../senders/sender.js';

runSender(async ({ url, concurrency, event }) => {
  const agent = new Agent({ connections: concurrency, keepAliveTimeout: 4000 });
  return {
    async deliver(count, data, events) {
      let next = 0;
      const worker = async () => {
        while (next < count) {
          const body = JSON.stringify({
            event,
            type: event,
            timestamp: new Date().toISOString(),
            data: data(next++),
          });
          const response = await request(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
            dispatcher: agent,
          });
          await response.body.dump();
          if (response.statusCode >= 200 && response.statusCode < 300) events.delivered();
          else events.failed(`status ${response.statusCode}`);
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
    },
  };
});
