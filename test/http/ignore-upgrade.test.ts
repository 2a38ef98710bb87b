import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type RequestListener } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { PassThrough } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { ignoreUpgrade } from '../../src/http/ignore-upgrade.js';
import { closeAll, listen, parseReply, rawRequest } from '../helpers/http.js';

afterAll(closeAll);

const tls = new URL('../fixtures/tls/', import.meta.url);

/** Answers with what it saw: method, target, the upgrade fields and the body. */
const echo: RequestListener = (req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => {
    body += chunk;
  });
  req.on('end', () => {
    res.setHeader('Content-Type', 'application/json');
    res.end(
      JSON.stringify({
        method: req.method,
        url: req.url,
        upgrade: req.headers.upgrade ?? null,
        connection: req.headers.connection ?? null,
        settings: req.headers['http2-settings'] ?? null,
        body,
      }),
    );
  });
};

const H2C =
  'Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n';

describe('ignoreUpgrade', () => {
  it('serves an h2c upgrade as the plain request, body and keep-alive included', async () => {
    const server = createServer(echo);
    const seen: boolean[] = [];
    server.on('upgrade', (req, socket, head) => seen.push(ignoreUpgrade(req, socket, head)));
    const { port } = await listen(server);
    const text = await rawRequest(
      port,
      `POST /a?b=1 HTTP/1.1\r\nHost: x\r\n${H2C}Content-Length: 11\r\n\r\nhello world` +
        'GET /second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    expect(seen).toEqual([true]);
    const [first, second] = text.split(/(?=HTTP\/1\.1 )/);
    const one = parseReply(first!);
    expect(one.status).toBe(200);
    expect(JSON.parse(one.body)).toEqual({
      method: 'POST',
      url: '/a?b=1',
      upgrade: null,
      connection: null,
      settings: null,
      body: 'hello world',
    });
    // the same connection goes on: the next request is read by the same parser
    expect(JSON.parse(parseReply(second!).body)).toMatchObject({
      url: '/second',
      connection: 'close',
    });
  });

  it('keeps the other Connection options', async () => {
    const server = createServer(echo);
    server.on('upgrade', (req, socket, head) => ignoreUpgrade(req, socket, head));
    const { port } = await listen(server);
    const reply = parseReply(
      await rawRequest(
        port,
        'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: foo/2\r\nConnection: close, Upgrade\r\n\r\n',
      ),
    );
    expect(JSON.parse(reply.body)).toMatchObject({ upgrade: null, connection: 'close' });
  });

  it('works over TLS', async () => {
    const server = createHttpsServer(
      {
        key: readFileSync(new URL('server.key', tls)),
        cert: readFileSync(new URL('server.pem', tls)),
      },
      echo,
    );
    server.on('upgrade', (req, socket, head) => ignoreUpgrade(req, socket, head));
    const { port } = await listen(server);
    const socket = tlsConnect({ port, host: '127.0.0.1', rejectUnauthorized: false });
    await new Promise((resolve) => socket.once('secureConnect', resolve));
    socket.end(
      `PUT /t HTTP/1.1\r\nHost: x\r\n${H2C}Content-Length: 2\r\nConnection: close\r\n\r\nok`,
    );
    let text = '';
    for await (const chunk of socket) text += chunk;
    const reply = parseReply(text);
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toMatchObject({ method: 'PUT', url: '/t', body: 'ok' });
  });

  it('does nothing for CONNECT, a request without Upgrade, or a socket no server accepted', () => {
    const socket = new PassThrough();
    const request = (method: string, upgrade?: string) =>
      ({
        method,
        url: '/',
        httpVersion: '1.1',
        rawHeaders: [],
        headers: upgrade === undefined ? {} : { upgrade },
      }) as unknown as IncomingMessage;
    expect(ignoreUpgrade(request('CONNECT', 'h2c'), socket, Buffer.alloc(0))).toBe(false);
    expect(ignoreUpgrade(request('GET'), socket, Buffer.alloc(0))).toBe(false);
    expect(ignoreUpgrade(request('GET', 'h2c'), socket, Buffer.alloc(0))).toBe(false);
    expect(socket.readableLength).toBe(0);
  });
});
