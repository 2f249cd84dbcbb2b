// Slack's inbound payloads, checked with zod at the receivers' boundary before Bolt or a listener
// reads them: in HTTP mode a signed malformed body is answered 400; in Socket Mode it is acked and dropped.
import { isValidSlackRequest, type App, type Receiver, type ReceiverEvent } from '@slack/bolt';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import type { Logger } from 'pino';
import { z } from 'zod';

// What must stay true: every field Bolt's processEvent or a listener of ours dereferences or stores
// is checked here with the type they assume, so a body that passes cannot throw in either (a
// TypeError there became a 500, and Slack redelivered it). Unknown fields pass as they are.

const id = z.string().min(1);
const ts = z.string().min(1);
/** An object, never null or an array: Bolt reads fields of it. */
const record = z.looseObject({});

const stringOrObject = z.union([z.string(), record], { error: 'Invalid input: expected string or object' });

/** Fields Bolt reads on every event (its channel, user, item and subteam when present). */
const anyEvent = z.looseObject({
  type: id,
  channel: stringOrObject.optional(),
  user: stringOrObject.optional(),
  item: record.optional(),
  subteam: record.optional(),
});

/** The events the bot's listeners handle, with the fields they read. */
const HANDLED_EVENTS: Record<string, z.ZodType> = {
  app_mention: z.looseObject({ channel: id, ts, text: z.string(), user: id.nullish(), bot_id: id.nullish(), thread_ts: ts.nullish(), team: id.nullish() }),
  message: z.looseObject({ channel: id, ts, subtype: z.string().nullish(), user: id.nullish(), bot_id: id.nullish(), text: z.string().nullish(), thread_ts: ts.nullish() }),
  app_home_opened: z.looseObject({ user: id, tab: z.string().nullish() }),
  agent_session_stopped: z.looseObject({ channel: id, event_ts: ts, user: id.nullish(), thread_ts: ts.nullish(), streaming_message_ts: z.array(ts).nullish() }),
};

const eventCallback = z.looseObject({
  team_id: id,
  event_id: id,
  event: anyEvent,
  enterprise_id: z.string().nullish(),
  authorizations: z.array(z.looseObject({ team_id: z.string().nullish(), enterprise_id: z.string().nullish(), is_enterprise_install: z.boolean().optional() })).optional(),
});

/** Who acted: Bolt reads `user.id`, and `user.team_id` when `team` is null (an org-wide install). */
const actor = z.looseObject({ id, team_id: z.string().nullish() });
const interactive = {
  user: actor,
  team: z.looseObject({ id }).nullable().optional(),
  enterprise: record.nullable().optional(),
  channel: z.looseObject({ id }).optional(),
};

const blockActions = z.looseObject({
  ...interactive,
  actions: z.array(z.looseObject({ type: id, action_id: id, block_id: z.string().optional(), value: z.string().optional() })).min(1),
  container: z.looseObject({ channel_id: z.string().optional(), message_ts: z.string().optional(), thread_ts: z.string().optional() }).optional(),
  message: z.looseObject({ ts: z.string().optional(), thread_ts: z.string().optional() }).optional(),
  view: z.looseObject({ id }).optional(),
});

const view = z.looseObject({ id, callback_id: z.string(), app_installed_team_id: z.string().nullish() });

/** JSON payloads by their `type`. */
const PAYLOADS: Record<string, z.ZodType> = {
  event_callback: eventCallback,
  url_verification: z.looseObject({ challenge: z.string() }),
  app_rate_limited: z.looseObject({ team_id: id }),
  block_actions: blockActions,
  block_suggestion: z.looseObject({ ...interactive, action_id: id, block_id: z.string(), value: z.string() }),
  view_submission: z.looseObject({ ...interactive, view }),
  view_closed: z.looseObject({ ...interactive, view }),
  shortcut: z.looseObject({ ...interactive, callback_id: id }),
  message_action: z.looseObject({ ...interactive, callback_id: id, message: record.optional() }),
};

/** A slash command: form fields without a payload. */
const slashCommand = z.looseObject({ command: z.string().startsWith('/'), team_id: id, user_id: id, channel_id: id, text: z.string() });

function firstIssue(what: string, result: { success: boolean; error?: z.ZodError }): string | undefined {
  if (result.success) return undefined;
  const issue = result.error!.issues[0]!;
  return `${what}: ${issue.path.length ? issue.path.join('.') : 'body'}: ${issue.message}`;
}

/**
 * Why `body` (an HTTP body as Bolt parses it, or a Socket Mode envelope's payload) is not a
 * well-formed event, action, view, command or URL check, in one line; undefined when it is one.
 */
export function slackPayloadProblem(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'the body is not a JSON object';
  const fields = body as Record<string, unknown>;
  if (fields.ssl_check === '1') return undefined;
  if (fields.type === undefined && fields.command !== undefined) return firstIssue('slash command', slashCommand.safeParse(body));
  if (typeof fields.type !== 'string') return fields.type === undefined ? 'the payload has no type' : 'the payload type is not a string';
  const schema = PAYLOADS[fields.type];
  if (!schema) return `unexpected payload type ${JSON.stringify(fields.type.slice(0, 40))}`;
  const problem = firstIssue(`${fields.type} payload`, schema.safeParse(body));
  if (problem || fields.type !== 'event_callback') return problem;
  const event = fields.event as { type: string };
  const handled = HANDLED_EVENTS[event.type];
  return handled ? firstIssue(`${event.type} event`, handled.safeParse(event)) : undefined;
}

/**
 * Parses a request body as Bolt's HTTP receiver does (a form's `payload` field is JSON, any other
 * form is its fields, else the body is JSON), then checks it with {@link slackPayloadProblem}.
 */
export function slackBodyProblem(rawBody: Buffer, contentType: string | undefined): string | undefined {
  const text = rawBody.toString('utf8');
  let parsed: unknown;
  try {
    if (contentType === 'application/x-www-form-urlencoded') {
      const form = parseQuery(text);
      if (Array.isArray(form.payload)) return 'the form carries more than one payload field';
      parsed = form.payload === undefined ? { ...form } : JSON.parse(form.payload);
    } else {
      parsed = JSON.parse(text);
    }
  } catch {
    return 'the body is not valid JSON';
  }
  return slackPayloadProblem(parsed);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Bolt's HTTP request listener behind the payload check: a POST whose body (already read, as
 * `rawBody`) carries a valid Slack signature but is not a well-formed payload is answered 400 with
 * one warning line, and Bolt never sees it. Unsigned or wrongly signed requests go on to Bolt, which
 * answers 401, so nothing about a body is said to whoever cannot sign it.
 */
export function guardSlackRequests(listener: RequestListener, options: { signingSecret: string; logger: Logger }): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const rawBody = (req as IncomingMessage & { rawBody?: Buffer }).rawBody;
    const signature = header(req, 'x-slack-signature');
    const timestamp = Number(header(req, 'x-slack-request-timestamp'));
    const signed =
      req.method === 'POST' &&
      rawBody !== undefined &&
      signature !== undefined &&
      Number.isFinite(timestamp) &&
      isValidSlackRequest({ signingSecret: options.signingSecret, body: rawBody.toString('utf8'), headers: { 'x-slack-signature': signature, 'x-slack-request-timestamp': timestamp } });
    const problem = signed ? slackBodyProblem(rawBody!, header(req, 'content-type')) : undefined;
    if (problem) {
      options.logger.warn({ path: req.url, problem }, 'malformed Slack request refused');
      const text = JSON.stringify({ error: `malformed request: ${problem}` });
      res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    listener(req, res);
  };
}

/**
 * A receiver (Socket Mode's) whose events pass the same payload check before the app processes
 * them: a malformed envelope payload is acked, so Slack does not redeliver it, logged in one warning
 * line, and dropped. Everything else is the inner receiver's.
 */
export class CheckedReceiver implements Receiver {
  constructor(
    private readonly inner: Receiver,
    private readonly logger: Logger,
  ) {}

  init(app: App): void {
    const processEvent = async (event: ReceiverEvent): Promise<void> => {
      const problem = slackPayloadProblem(event.body);
      if (!problem) return app.processEvent(event);
      this.logger.warn({ problem }, 'malformed Slack payload refused');
      await event.ack();
    };
    this.inner.init(new Proxy(app, { get: (target, key) => (key === 'processEvent' ? processEvent : Reflect.get(target, key, target)) }));
  }

  start(...args: unknown[]): Promise<unknown> {
    return this.inner.start(...args);
  }

  stop(...args: unknown[]): Promise<unknown> {
    return this.inner.stop(...args);
  }
}
