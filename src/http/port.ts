// Whether a port can be listened on, and a listen failure named as the PORT setting's fault.
import { createServer } from 'node:net';
import { describeError, StartupError } from '@verdict/runtime/startup-error';

export function portError(port: number, error: unknown): Error {
  const code = (error as { code?: string }).code;
  if (code === 'EADDRINUSE') return new StartupError('PORT', `PORT ${port} is already in use: stop what listens there or set PORT to a free port`, { cause: error });
  if (code === 'EACCES') return new StartupError('PORT', `PORT ${port} needs privileges this process lacks: set PORT above 1023`, { cause: error });
  return error instanceof Error ? error : new Error(describeError(error));
}

/** Fails with a {@link StartupError} naming PORT when nothing can listen on it. */
export async function assertPortFree(port: number, host: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error) => reject(portError(port, error)));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}
