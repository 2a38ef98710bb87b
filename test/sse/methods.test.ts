import { afterEach, describe, expect, it } from 'vitest';
import { createHub } from '../../src/realtime/hub.js';
import { streamChannel } from '../../src/sse/channel.js';
import { closeAll, expectProblem, request, serve } from '../helpers/http.js';

afterEach(closeAll);

describe('event streams and methods', () => {
  it('answer a POST (or any method but GET and HEAD) with 405 and Allow, writing no stream', async () => {
    const hub = createHub();
    const server = await serve((req, res) => {
      streamChannel(req, res, { hub, channel: 'news' });
    });
    const post = await request(server, '/', { method: 'POST', body: 'x' });
    expectProblem(post, 405);
    expect(post.headers.allow).toBe('GET, HEAD');
    expectProblem(await request(server, '/', { method: 'DELETE' }), 405);
    await hub.close();
  });
});
