// Fake Slack Web API on loopback: answers like slack.com/api, records every call and checks Slack's limits.
// This file routes HTTP requests and records calls; each group of methods lives in its own file.
import { EventEmitter } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { agentMethods, pressStop, sessionKey } from './agents.js';
import { authMethods } from './auth.js';
import { chatMethods } from './chat.js';
import { createFaults } from './faults.js';
import { fileRoutes } from './files.js';
import { createFakeOAuth } from './oauth.js';
import { planStates } from './plan-states.js';
import { createWorkspace } from './state.js';
import type { FakeMessage, FakeSlack, FakeSlackOptions, SlackCall } from './types.js';
import { viewMethods } from './views.js';
import { fail, parseArgs, readBody, str, type Answer, type MethodHandler, type Team } from './wire.js';

/**
 * Starts the fake Slack Web API on an ephemeral loopback port. Point a WebClient at it with
 * `new WebClient(token, { slackApiUrl: fake.apiUrl })`. It answers only the methods the bot calls
 * (`unknown_method` otherwise, as Slack does).
 */
export async function startFakeSlack(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const ws = createWorkspace(options);
  const faults = createFaults(options, ws.violations);
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);

  const record = (call: SlackCall): void => {
    ws.calls.push(call);
    emitter.emit('call', call);
  };
  const files = fileRoutes(ws, record);
  const oauth = createFakeOAuth(options.oauth, ws.toTeam);
  ws.issuedTeam = (token) => {
    const issued = oauth.teamOfToken(token);
    if (!issued) return undefined;
    return oauth.tokenProblem(token) ? null : { ...issued.team, isEnterpriseInstall: issued.isEnterpriseInstall };
  };
  const handlers: Record<string, MethodHandler> = {
    ...authMethods(),
    ...chatMethods(ws),
    ...viewMethods(ws),
    ...agentMethods(ws),
    ...files.methods,
  };

  const answerApi = (method: string, args: Record<string, unknown>, token: string | undefined): { answer: Answer; team?: Team } => {
    const failure = faults.injected(method);
    if (failure) return { answer: failure };
    // The one method called without a token: the client id and secret authenticate it.
    if (method === 'oauth.v2.access') return { answer: oauth.access(args) };
    if (!token) return { answer: fail('not_authed') };
    const problem = oauth.tokenProblem(token);
    if (problem) return { answer: fail(problem) };
    const team = ws.teamFor(token);
    if (!team) return { answer: fail('invalid_auth') };
    if (method === 'chat.postMessage') {
      const channel = str(args.channel);
      if (channel && faults.rateLimited(/^[UW]/.test(channel) ? `D${channel}` : channel, Date.now())) {
        return { answer: { status: 429, body: { ok: false, error: 'ratelimited' }, headers: { 'Retry-After': '1' } }, team };
      }
    }
    if (method === 'chat.update') {
      const retryAfter = faults.updateRateLimited(team.teamId, Date.now());
      if (retryAfter !== undefined) {
        return { answer: { status: 429, body: { ok: false, error: 'ratelimited' }, headers: { 'Retry-After': String(retryAfter) } }, team };
      }
    }
    const handler = handlers[method];
    if (!handler) return { answer: fail('unknown_method', { req_method: method }), team };
    return { answer: handler({ method, args, team }), team };
  };

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const auth = req.headers.authorization;
      const headerToken = auth?.toLowerCase().startsWith('bearer ') ? auth.slice(7).trim() : undefined;
      const download = /^\/files-pri\/[A-Z0-9]+-([A-Z0-9]+)\/(?:download\/)?[^/]+$/.exec(url.pathname);
      if (download?.[1] && req.method === 'GET') {
        files.handleFileDownload(res, download[1], headerToken);
        return;
      }
      const upload = /^\/upload\/([^/]+)$/.exec(url.pathname);
      if (upload?.[1] && req.method === 'POST') {
        await files.handleUpload(req, res, upload[1], headerToken);
        return;
      }
      const api = /^\/api\/([A-Za-z0-9_.]+)$/.exec(url.pathname);
      if (!api?.[1]) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
        return;
      }
      const method = api[1];
      const body = await readBody(req);
      let args: Record<string, unknown> | undefined;
      try {
        args = parseArgs(body, req.headers['content-type'] ?? '', url.searchParams);
      } catch {
        args = undefined;
      }
      const token = headerToken ?? str(args?.token);
      const { answer, team } = args ? answerApi(method, args, token) : { answer: fail('invalid_json'), team: undefined };
      args ??= { raw: body.toString('utf8') };
      res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', ...answer.headers });
      res.end(JSON.stringify(answer.body));
      record({
        method,
        args,
        at: Date.now(),
        ...(token ? { token } : {}),
        ...(team ? { teamId: team.teamId } : {}),
        status: answer.status,
        response: answer.body,
      });
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ws.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const baseUrl = ws.baseUrl;

  return {
    baseUrl,
    apiUrl: `${baseUrl}/api/`,
    oauth,
    paceScale: options.paceScale ?? 1,
    calls: ws.calls,
    violations: ws.violations,
    files: ws.files,
    homeViews: ws.homeViews,
    ephemerals: ws.ephemerals,
    sessions: ws.sessions,
    session: (channel, threadTs) => ws.sessions.get(sessionKey(ws.defaultTeam.teamId, channel, threadTs)),
    pressStop: (input) => pressStop(ws, input),
    callsTo: (method) => ws.calls.filter((c) => c.method === method),
    planStates: (filter) => planStates(ws.calls, filter),
    messages: (channel, threadTs) =>
      ws.messages.filter(
        (m) =>
          !m.seeded &&
          (channel === undefined || m.channel === channel) &&
          (threadTs === undefined || m.threadTs === threadTs || m.ts === threadTs),
      ),
    seedMessage: (seed) => {
      const message: FakeMessage = {
        channel: seed.channel,
        ts: seed.ts ?? ws.nextTs(),
        ...(seed.threadTs ? { threadTs: seed.threadTs } : {}),
        user: seed.user,
        ...(seed.botId ? { botId: seed.botId } : {}),
        team: ws.defaultTeam.teamId,
        text: seed.text,
        ...(seed.blocks ? { blocks: seed.blocks } : {}),
        updates: 0,
        seeded: true,
      };
      ws.messages.push(message);
      return message;
    },
    sharedFiles: ws.sharedFiles,
    shareFile: files.shareFile,
    waitFor: (predicate, timeoutMs = 5000) => {
      const found = ws.calls.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise<SlackCall>((resolve, reject) => {
        const onCall = (call: SlackCall) => {
          try {
            if (!predicate(call)) return;
            cleanup();
            resolve(call);
          } catch (error) {
            cleanup();
            reject(error instanceof Error ? error : new Error(String(error)));
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`fake Slack: no matching call within ${timeoutMs} ms; calls so far: ${ws.calls.map((c) => c.method).join(', ') || 'none'}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          emitter.off('call', onCall);
        };
        emitter.on('call', onCall);
      });
    },
    failNext: faults.failNext,
    refuseBlockTypes: (types) => {
      for (const t of types) ws.refusedBlockTypes.add(t);
    },
    reset: () => {
      ws.clear();
      faults.clear();
    },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
