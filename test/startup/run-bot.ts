// Runs `src/main.ts` as a child process with a given environment and collects its output, for
// start-up and shutdown tests; and a minimal Slack (Web API + Socket Mode) for Socket Mode starts.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export interface BotRun {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or signal) once the process ends, rejects after `timeoutMs`. */
  exited(timeoutMs: number): Promise<{ code: number | null; signal: string | null; elapsedMs: number }>;
  waitFor(text: string | RegExp, timeoutMs: number): Promise<void>;
}

/** A minimal bot environment (HTTP mode); tests add or override variables. */
export function baseEnv(extra: Record<string, string>): Record<string, string> {
  return {
    SLACK_BOT_TOKEN: `xoxb-test-${randomBytes(6).toString('hex')}`,
    SLACK_SIGNING_SECRET: randomBytes(16).toString('hex'),
    ANTHROPIC_API_KEY: `test-key-${randomBytes(6).toString('hex')}`,
    ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/',
    SANDBOX_TIME_SCALE: '0.01',
    LOG_LEVEL: 'info',
    ...extra,
  };
}

/** Runs `src/main.ts` through tsx, or `entry` (compiled JavaScript, relative to the repository) with plain node. */
export function runBot(env: Record<string, string>, options: { cwd?: string; detached?: boolean; entry?: string } = {}): BotRun {
  const started = Date.now();
  // Only what a shell would pass: no variable from the test runner's own environment leaks in.
  const inherited = Object.fromEntries(
    ['PATH', 'HOME', 'TMPDIR', 'LANG'].filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]!]),
  );
  // tsx by its file URL: the bot may run in another folder (a .env there), where 'tsx' would not resolve.
  const args = options.entry
    ? [path.join(ROOT, options.entry)]
    : ['--import', pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href, path.join(ROOT, 'src/main.ts')];
  const child = spawn(process.execPath, args, {
    cwd: options.cwd ?? ROOT,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exit = new Promise<{ code: number | null; signal: string | null; elapsedMs: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, elapsedMs: Date.now() - started })),
  );
  return {
    child,
    output: () => output,
    exited: (timeoutMs) =>
      Promise.race([
        exit,
        new Promise<never>((_, reject) =>
          setTimeout(() => {
            child.kill('SIGKILL');
            reject(new Error(`the bot did not exit within ${timeoutMs} ms; output:\n${output}`));
          }, timeoutMs).unref(),
        ),
      ]),
    waitFor: async (text, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      while (!(typeof text === 'string' ? output.includes(text) : text.test(output))) {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the bot exited before printing ${String(text)}; output:\n${output}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${String(text)}; output:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

/** JSON log lines of a run (non-JSON lines skipped). */
export function logLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

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
