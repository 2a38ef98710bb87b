// Browser code shared by the reference server's console (`/`) and the SPA example: open the
// two live feeds of one service, the Server-Sent Events stream and the WebSocket channel,
// and show each message as it arrives, with every raw frame. Plain ES module, no build.

/**
 * Opens `/events` (EventSource) and `/ws` (WebSocket) of the service at `base`. Both carry
 * the browser's `session` cookie: neither API can send an `Authorization` header.
 *
 * @param {object} options
 * @param {URL} options.base the service's origin
 * @param {string} options.channel the WebSocket channel to subscribe to
 * @param {(via: 'sse' | 'ws', message: object) => void} options.onMessage a created message
 * @param {(via: string, text: string) => void} options.onFrame every raw frame, both ways
 * @param {(via: 'sse' | 'ws', state: string) => void} options.onState connection state
 * @returns {{ close(): void }}
 */
export function openLive({ base, channel, onMessage, onFrame, onState }) {
  const events = new EventSource(new URL('/events', base), { withCredentials: true });
  events.onopen = () => onState('sse', 'open');
  events.onerror = () => onState('sse', events.readyState === 2 ? 'closed' : 'reconnecting');
  events.onmessage = (event) => {
    onFrame('sse ←', `id: ${event.lastEventId}\ndata: ${event.data}`);
    const body = JSON.parse(event.data);
    if (body.event === 'message.created') onMessage('sse', body.data);
  };

  const wsUrl = new URL('/ws', base);
  wsUrl.protocol = wsUrl.protocol === 'https:' ? 'wss:' : 'ws:';
  const socket = new WebSocket(wsUrl);
  const sendFrame = (frame) => {
    const text = JSON.stringify(frame);
    onFrame('ws →', text);
    socket.send(text);
  };
  socket.onopen = () => {
    onState('ws', 'open');
    sendFrame({ type: 'join' });
    sendFrame({ type: 'subscribe', channel });
  };
  socket.onclose = (event) => onState('ws', `closed (${event.code})`);
  socket.onmessage = (event) => {
    onFrame('ws ←', event.data);
    const frame = JSON.parse(event.data);
    if (frame.type === 'push' && frame.event === 'message.created') onMessage('ws', frame.data);
  };

  return {
    close() {
      events.close();
      socket.close(1000);
    },
  };
}

/**
 * Opens both feeds into a page's live panel: the lists `#sse-messages` and `#ws-messages`,
 * the states `#sse-state` and `#ws-state`, and the raw frames in `#frames`.
 *
 * @param {URL} base the service's origin
 * @param {string} channel the WebSocket channel to subscribe to
 */
export function showLive(base, channel) {
  const $ = (id) => document.getElementById(id);
  return openLive({
    base,
    channel,
    onMessage: (via, message) => appendItem($(`${via}-messages`), describeMessage(message), via),
    onFrame: (via, text) => appendItem($('frames'), `${via} ${text}`),
    onState: (via, state) => {
      $(`${via}-state`).textContent = state;
    },
  });
}

/** Appends one line to a list element, as text (never HTML). */
export function appendItem(list, text, testId) {
  const item = document.createElement('li');
  item.textContent = text;
  if (testId) item.dataset.testid = testId;
  list.append(item);
  item.scrollIntoView({ block: 'nearest' });
}

/** Renders a message for the lists: `from: text`. */
export const describeMessage = (message) => `${message.from}: ${message.text}`;

/** The `detail` of a Problem Details answer, else its status line. */
export async function problemText(response) {
  const type = response.headers.get('content-type') ?? '';
  if (type.startsWith('application/problem+json')) {
    const problem = await response.json();
    return `${problem.status} ${problem.title}: ${problem.detail}`;
  }
  return `${response.status} ${response.statusText}`;
}
