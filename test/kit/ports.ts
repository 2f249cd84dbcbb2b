// Free loopback ports for servers a test starts, stops and starts again.
import net from 'node:net';

/** A free port below the kernel's ephemeral range, for a Postgres that must restart on the same port. */
export async function freePortOutsideEphemeralRange(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}
