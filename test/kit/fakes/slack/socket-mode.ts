// A minimal Slack for Socket Mode starts: auth.test and apps.connections.open, and a WebSocket that says hello.
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { Duplex } from 'node:stream';

export interface MiniSlack {
  apiUrl: string;
  /** Drops every open Socket Mode connection (the client then reconnects). */
  dropSockets(): void;
  /** Whether new Socket Mode connections get Slack's hello (without it the client never counts as connected). */
  setHello(hello: boolean): void;
  close(): Promise<void>;
}

/**
 * Slack's Web API for the two start-up calls (auth.test for the bot token, apps.connections.open
 * for the app token) and a Socket Mode WebSocket that says hello, speaking Slack's wire protocol.
 */
export async function startMiniSlack(options: { botToken: string; appToken: string; hello?: boolean }): Promise<MiniSlack> {
  const sockets = new Set<Duplex>();
  let hello = options.hello !== false;
  let base = '';
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const method = (req.url ?? '').split('?')[0]!.split('/').pop();
      const token = (req.headers.authorization ?? '').replace(/^Bearer /, '') || new URLSearchParams(body).get('token') || '';
      const answer = (payload: object) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(payload));
      };
      if (method === 'auth.test') {
        if (token !== options.botToken) return answer({ ok: false, error: 'invalid_auth' });
        return answer({ ok: true, url: 'https://mini.slack.test/', team: 'Mini', user: 'verdict', team_id: 'T0MINI', user_id: 'U0BOT', bot_id: 'B0BOT' });
      }
      if (method === 'apps.connections.open') {
        if (token !== options.appToken) return answer({ ok: false, error: 'invalid_auth' });
        return answer({ ok: true, url: `${base.replace('http', 'ws')}/socket` });
      }
      answer({ ok: false, error: 'unknown_method' });
    });
  });
  server.on('upgrade', (req, socket) => {
    const accept = createHash('sha1')
      .update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    // Answer the client's pings (masked frames, short payloads), or it reconnects after its ping timeout.
    socket.on('data', (frame: Buffer) => {
      if (frame.length < 6 || (frame[0]! & 0x0f) !== 0x9) return;
      const length = frame[1]! & 0x7f;
      const mask = frame.subarray(2, 6);
      const payload = Buffer.from(frame.subarray(6, 6 + length).map((byte, i) => byte ^ mask[i % 4]!));
      socket.write(Buffer.concat([Buffer.from([0x8a, payload.length]), payload]));
    });
    if (hello) {
      const payload = Buffer.from(JSON.stringify({ type: 'hello', num_connections: 1, connection_info: { app_id: 'A0MINI' } }));
      socket.write(Buffer.concat([Buffer.from([0x81, payload.length]), payload]));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  base = `http://127.0.0.1:${address.port}`;
  return {
    apiUrl: `${base}/api/`,
    setHello: (value) => {
      hello = value;
    },
    dropSockets: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
