/**
 * One client connection per call, for each {@link ClientKind}: resolves once it is open (and
 * its subscription sent), rejects on an error or refusal before that. Every message carrying
 * a {@link TickData} goes to `onTick`; a close after opening goes to `onClose`.
 */
import { Agent, request } from 'node:http';
import { io } from 'socket.io-client';
import WebSocket from 'ws';
import type { ClientOptions, TickData } from './types.js';

export interface Handlers {
  onTick(data: TickData): void;
  onClose(): void;
}

/** Something to close when the process ends. */
export interface Connection {
  close(): void;
}

export type Connector = (handlers: Handlers) => Promise<Connection>;

function connectWs(options: ClientOptions, { onTick, onClose }: Handlers): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(options.url, { perMessageDeflate: false });
    let open = false;
    ws.on('open', () => {
      open = true;
      if (options.subscribe !== undefined) ws.send(options.subscribe);
      resolve({ close: () => ws.terminate() });
    });
    ws.on('message', (raw) => {
      const message = JSON.parse(raw.toString()) as { event?: string; data?: TickData };
      if (message.event === 'tick' && message.data !== undefined) onTick(message.data);
    });
    ws.on('error', (error) => {
      if (!open) reject(error);
    });
    ws.on('close', () => {
      if (open) onClose();
      else reject(new Error('closed before opening'));
    });
  });
}

function connectSocketIo(
  options: ClientOptions,
  { onTick, onClose }: Handlers,
): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const socket = io(options.url, {
      transports: ['websocket'],
      forceNew: true,
      reconnection: false,
      timeout: options.connectTimeoutMs,
    });
    let open = false;
    socket.on('tick', onTick);
    socket.on('connect', () => {
      open = true;
      socket.emit('subscribe', 'bench');
      resolve({ close: () => socket.disconnect() });
    });
    socket.on('connect_error', (error) => {
      if (!open) reject(error);
    });
    socket.on('disconnect', () => {
      if (open) onClose();
    });
  });
}

/** Each event's `data:` line (`data:` with or without a space), JSON-decoded. */
function parseEvents(text: string, onTick: (data: TickData) => void): string {
  let start = 0;
  for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n', start)) {
    const block = text.slice(start, end);
    start = end + 2;
    const at = block.startsWith('data:') ? 0 : block.indexOf('\ndata:') + 1;
    if (at === 0 && !block.startsWith('data:')) continue; // no data line (`retry:`, comments)
    let from = at + 'data:'.length;
    if (block.charCodeAt(from) === 32) from++;
    const lineEnd = block.indexOf('\n', from);
    const data = JSON.parse(block.slice(from, lineEnd === -1 ? undefined : lineEnd)) as TickData;
    if (typeof data === 'object' && data !== null && 'seq' in data) onTick(data);
  }
  return text.slice(start);
}

const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });

function connectSse(options: ClientOptions, { onTick, onClose }: Handlers): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const req = request(options.url, { agent, headers: { accept: 'text/event-stream' } }, (res) => {
      const type = res.headers['content-type'] ?? '';
      if (res.statusCode !== 200 || !type.startsWith('text/event-stream')) {
        reject(new Error(`answered ${res.statusCode} ${type}`));
        res.destroy();
        return;
      }
      let rest = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        rest = parseEvents(rest + chunk, onTick);
      });
      res.on('error', () => {}); // reported by 'close'
      res.on('close', onClose);
      resolve({ close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

export function connector(options: ClientOptions): Connector {
  switch (options.kind) {
    case 'ws':
      return (handlers) => connectWs(options, handlers);
    case 'socketio':
      return (handlers) => connectSocketIo(options, handlers);
    case 'sse':
      return (handlers) => connectSse(options, handlers);
  }
}
