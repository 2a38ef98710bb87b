import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Listens on 127.0.0.1, port 0, and prints the port (one line on stdout) once listening.
 * Under the orchestrator (`BENCH_PARENT=1`) the server exits when its stdin closes, so it
 * never outlives the run; it also exits cleanly on SIGTERM/SIGINT, which lets
 * `node --cpu-prof` write its profile.
 */
export function serve(server: Server): void {
  const exit = () => {
    server.closeAllConnections();
    process.exit(0);
  };
  process.on('SIGTERM', exit);
  process.on('SIGINT', exit);
  if (process.env.BENCH_PARENT === '1') {
    process.stdin.on('end', exit);
    process.stdin.resume();
  }
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    process.stdout.write(`${port}\n`);
  });
}
