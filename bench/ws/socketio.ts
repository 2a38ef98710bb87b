/**
 * Socket.IO 4 (WebSocket transport only): each client emits `subscribe` with a room name and
 * joins it; the server broadcasts with `io.to('bench').emit('tick', data)`.
 */
import { Server } from 'socket.io';
import { createFanoutServer } from '../realtime/serve.js';

const { server, start } = createFanoutServer();
const io = new Server(server, { transports: ['websocket'], serveClient: false });
io.on('connection', (socket) => {
  socket.on('subscribe', (room: unknown) => {
    if (room === 'bench') void socket.join(room);
  });
});

start({
  broadcast(data) {
    io.to('bench').emit('tick', data);
  },
  connections: () => io.of('/').adapter.rooms.get('bench')?.size ?? 0,
});
