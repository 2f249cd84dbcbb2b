// Free loopback ports for servers a test starts, stops and starts again.
import net from 'node:net';

const isFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/** A free port below the kernel's ephemeral range, for a Postgres that must restart on the same port. */
export async function freePortOutsideEphemeralRange(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    if (await isFree(port)) return port;
  }
}

/**
 * A free port whose next one is free too, below the ephemeral range (where other tests' client
 * sockets take ports at any moment): for a bot whose sandbox binds PORT + 1.
 */
export async function freePortWithNext(): Promise<number> {
  for (;;) {
    const port = await freePortOutsideEphemeralRange();
    if (await isFree(port + 1)) return port;
  }
}
