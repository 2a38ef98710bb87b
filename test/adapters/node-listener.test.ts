import { afterAll, describe, expect, it } from 'vitest';
import { requestId } from '../../src/http/request-id.js';
import { closeAll, parseReply, rawRequest, serve } from '../helpers/http.js';

afterAll(closeAll);

const head = (line: string) => `${line}\r\nHost: x\r\nConnection: close\r\n\r\n`;

describe('toNodeListener: the asterisk form (RFC 9112 §3.2.4)', () => {
  it('answers OPTIONS * about the server as a whole with 204, other methods with 400', async () => {
    const { port } = await serve([requestId()]);
    const options = parseReply(await rawRequest(port, head('OPTIONS * HTTP/1.1')));
    expect(options.status).toBe(204);
    expect(options.body).toBe('');
    expect(options.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);

    const get = parseReply(await rawRequest(port, head('GET * HTTP/1.1')));
    expect(get.status).toBe(400);
    expect(get.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(get.body)).toMatchObject({ status: 400, instance: '*' });

    // a path that nothing serves is still a 404
    expect(parseReply(await rawRequest(port, head('OPTIONS /nothing HTTP/1.1'))).status).toBe(404);
  });

  it('leaves OPTIONS * to a middleware that answers it', async () => {
    const { port } = await serve((_req, res) => {
      res.setHeader('Allow', 'GET, OPTIONS');
      res.statusCode = 200;
      res.end('mine');
    });
    const answer = parseReply(await rawRequest(port, head('OPTIONS * HTTP/1.1')));
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('mine');
  });
});
