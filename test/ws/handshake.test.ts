import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import {
  computeAcceptKey,
  selectSubprotocol,
  type UpgradeRequestLike,
  type UpgradeValidation,
  validateUpgradeRequest,
} from '../../src/ws/handshake.js';

const RFC_KEY = 'dGhlIHNhbXBsZSBub25jZQ==';

function fakeRequest(
  headers: Record<string, string | string[] | undefined> = {},
  overrides: Partial<UpgradeRequestLike> = {},
): UpgradeRequestLike {
  return {
    method: 'GET',
    httpVersion: '1.1',
    httpVersionMajor: 1,
    httpVersionMinor: 1,
    headers: {
      host: 'server.example.com',
      upgrade: 'websocket',
      connection: 'Upgrade',
      'sec-websocket-key': RFC_KEY,
      'sec-websocket-version': '13',
      ...headers,
    } as IncomingMessage['headers'],
    ...overrides,
  };
}

function refused(result: UpgradeValidation) {
  if (result.ok) throw new Error('expected a refusal');
  return result;
}

describe('computeAcceptKey', () => {
  it('answers the example of RFC 6455 §1.3', () => {
    expect(computeAcceptKey(RFC_KEY)).toBe('s3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
  });
});

describe('validateUpgradeRequest', () => {
  it('accepts the RFC 6455 §1.2 sample handshake', () => {
    const result = validateUpgradeRequest(
      fakeRequest({ 'sec-websocket-protocol': 'chat, superchat', origin: 'http://example.com' }),
    );
    expect(result).toEqual({ ok: true, key: RFC_KEY, protocols: ['chat', 'superchat'] });
  });

  it('accepts token lists and any case in Upgrade and Connection', () => {
    const result = validateUpgradeRequest(
      fakeRequest({ upgrade: 'h2c, WebSocket', connection: 'keep-alive, UPGRADE' }),
    );
    expect(result).toEqual({ ok: true, key: RFC_KEY, protocols: [] });
  });

  it('answers a method other than GET with 405 and Allow: GET', () => {
    expect(validateUpgradeRequest(fakeRequest({}, { method: 'POST' }))).toEqual({
      ok: false,
      status: 405,
      reason: 'The opening handshake must use GET.',
      headers: { Allow: 'GET' },
    });
  });

  it('answers 400 to no Host or two Host lines (RFC 9112 §3.2), counted in rawHeaders', () => {
    const raw = (hosts: string[]) => [
      ...hosts.flatMap((h) => ['Host', h]),
      'Upgrade',
      'websocket',
      'Connection',
      'Upgrade',
    ];
    const reason = 'The opening handshake must carry one Host header.';
    expect(validateUpgradeRequest(fakeRequest({}, { rawHeaders: raw(['a', 'b']) }))).toEqual({
      ok: false,
      status: 400,
      reason,
    });
    expect(
      validateUpgradeRequest(fakeRequest({ host: undefined }, { rawHeaders: raw([]) })),
    ).toEqual({ ok: false, status: 400, reason });
    // without rawHeaders, headers.host decides
    expect(refused(validateUpgradeRequest(fakeRequest({ host: undefined }))).status).toBe(400);
    expect(validateUpgradeRequest(fakeRequest({}, { rawHeaders: raw(['a']) })).ok).toBe(true);
  });

  it('accepts HTTP/2 and later versions', () => {
    const result = validateUpgradeRequest(
      fakeRequest({}, { httpVersion: '2.0', httpVersionMajor: 2, httpVersionMinor: 0 }),
    );
    expect(result.ok).toBe(true);
  });

  it.each([
    [
      'HTTP/1.0',
      fakeRequest({}, { httpVersion: '1.0', httpVersionMajor: 1, httpVersionMinor: 0 }),
      /HTTP\/1\.1/,
    ],
    ['no Upgrade', fakeRequest({ upgrade: undefined }), /Upgrade/],
    ['Upgrade without websocket', fakeRequest({ upgrade: 'h2c' }), /Upgrade/],
    ['Upgrade with websocket as a substring', fakeRequest({ upgrade: 'websockets' }), /Upgrade/],
    ['no Connection', fakeRequest({ connection: undefined }), /Connection/],
    ['Connection without upgrade', fakeRequest({ connection: 'keep-alive' }), /Connection/],
    ['no key', fakeRequest({ 'sec-websocket-key': undefined }), /Key/],
    ['an empty key', fakeRequest({ 'sec-websocket-key': '' }), /Key/],
    ['a key of 15 bytes', fakeRequest({ 'sec-websocket-key': 'AAAAAAAAAAAAAAAAAAAA' }), /Key/],
    ['a key of 17 bytes', fakeRequest({ 'sec-websocket-key': 'AAAAAAAAAAAAAAAAAAAAAAA=' }), /Key/],
    [
      'a key with a character outside base64',
      fakeRequest({ 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ-=' }),
      /Key/,
    ],
    [
      'a non-canonical base64 key',
      fakeRequest({ 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZR==' }),
      /Key/,
    ],
    ['two keys', fakeRequest({ 'sec-websocket-key': [RFC_KEY, RFC_KEY] }), /Key/],
    ['an empty protocol list', fakeRequest({ 'sec-websocket-protocol': '' }), /Protocol/],
    ['an empty protocol element', fakeRequest({ 'sec-websocket-protocol': 'a,,b' }), /Protocol/],
    [
      'a protocol that is not a token',
      fakeRequest({ 'sec-websocket-protocol': 'chat, v1/json' }),
      /Protocol/,
    ],
    ['a duplicated protocol', fakeRequest({ 'sec-websocket-protocol': 'a, b, a' }), /Protocol/],
  ])('refuses %s with 400', (_case, req, reason) => {
    const result = refused(validateUpgradeRequest(req));
    expect(result.status).toBe(400);
    expect(result.reason).toMatch(reason);
    expect(result.headers).toBeUndefined();
  });

  it.each([
    ['missing', undefined],
    ['8', '8'],
    ['14', '14'],
    ['a list', '13, 8'],
  ])('refuses a version that is %s with 426 and Sec-WebSocket-Version: 13', (_case, version) => {
    const result = refused(
      validateUpgradeRequest(fakeRequest({ 'sec-websocket-version': version })),
    );
    expect(result.status).toBe(426);
    expect(result.headers).toEqual({ 'Sec-WebSocket-Version': '13' });
    expect(result.reason).toMatch(/version/i);
  });

  it('trims optional whitespace around protocol tokens', () => {
    const result = validateUpgradeRequest(fakeRequest({ 'sec-websocket-protocol': ' a ,\tb.v1 ' }));
    expect(result).toEqual({ ok: true, key: RFC_KEY, protocols: ['a', 'b.v1'] });
  });
});

describe('selectSubprotocol', () => {
  it('picks the first supported protocol in the client’s order', () => {
    expect(selectSubprotocol(['chat.v2', 'chat.v1'], ['chat.v1', 'chat.v2'])).toBe('chat.v2');
    expect(selectSubprotocol(['x', 'chat.v1'], new Set(['chat.v1']))).toBe('chat.v1');
  });

  it('returns undefined when nothing matches, comparing exactly', () => {
    expect(selectSubprotocol([], ['chat'])).toBeUndefined();
    expect(selectSubprotocol(['Chat'], ['chat'])).toBeUndefined();
  });
});

describe('a real ws client', () => {
  it('sends a handshake that passes, and ws answers with our accept key', async () => {
    const wss = new WebSocketServer({ noServer: true });
    const server = createServer();
    const results: UpgradeValidation[] = [];
    server.on('upgrade', (req, socket, head) => {
      const result = validateUpgradeRequest(req);
      results.push(result);
      wss.handleUpgrade(req, socket, head, (ws) => ws.close(1000));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    try {
      const client = new WebSocket(`ws://127.0.0.1:${port}/`, ['chat.v2', 'chat.v1']);
      const [response] = (await once(client, 'upgrade')) as [IncomingMessage];
      const [code] = await once(client, 'close');
      expect(code).toBe(1000);

      expect(results).toHaveLength(1);
      const result = results[0]!;
      if (!result.ok) throw new Error(`refused: ${result.reason}`);
      expect(result.protocols).toEqual(['chat.v2', 'chat.v1']);
      expect(response.headers['sec-websocket-accept']).toBe(computeAcceptKey(result.key));
      expect(selectSubprotocol(result.protocols, ['chat.v1'])).toBe('chat.v1');
    } finally {
      wss.close();
      server.close();
      await once(server, 'close');
    }
  });
});
