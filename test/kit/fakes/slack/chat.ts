// Messages and threads: chat.postMessage, chat.update, chat.postEphemeral, chat.getPermalink,
// conversations.replies (paginated, with metadata on request) and conversations.open.
import { blockTypesIn, validateBlocks } from './block-kit.js';
import type { Workspace } from './state.js';
import type { FakeEphemeral, FakeMessage } from './types.js';
import { fail, isObj, ok, refuseInvalid, str, truthy, type Answer, type MethodHandler } from './wire.js';

/** Slack's checks of a message's text, blocks, attachments and metadata; an answer when it refuses. */
function checkMessageContent(
  ws: Workspace,
  method: string,
  args: Record<string, unknown>,
  requireContent: boolean,
): Answer | undefined {
  const text = typeof args.text === 'string' ? args.text : typeof args.markdown_text === 'string' ? args.markdown_text : undefined;
  if (requireContent && !text && args.blocks === undefined && args.attachments === undefined) return fail('no_text');
  if (text !== undefined && text.length > 40_000) {
    ws.violations.push(`${method}: text is ${text.length} characters (max 40000)`);
    return fail('msg_too_long');
  }
  if (args.blocks !== undefined) {
    if (!Array.isArray(args.blocks)) return refuseInvalid(ws.violations, method, 'invalid_blocks_format', [{ pointer: '/blocks', message: 'blocks must be a JSON array' }]);
    const refused = [...blockTypesIn(args.blocks)].filter((t) => ws.refusedBlockTypes.has(t));
    if (refused.length > 0) {
      // A configured refusal (a Slack without this block yet): answered as Slack does, not a bot error.
      const details = refused.map((t) => `unsupported type: ${t} [json-pointer:/blocks]`);
      return fail('invalid_blocks', { errors: details, response_metadata: { messages: details.map((d) => `[ERROR] ${d}`) } });
    }
    const problems = validateBlocks(args.blocks, 'message');
    if (problems.length > 0) return refuseInvalid(ws.violations, method, 'invalid_blocks', problems);
  }
  if (Array.isArray(args.attachments)) {
    const problems = args.attachments.flatMap((a: unknown, i) =>
      isObj(a) && a.blocks !== undefined ? validateBlocks(a.blocks, 'message', `/attachments/${i}/blocks`) : [],
    );
    if (problems.length > 0) return refuseInvalid(ws.violations, method, 'invalid_attachments', problems);
  }
  if (args.metadata !== undefined) {
    const m = args.metadata;
    if (!isObj(m) || typeof m.event_type !== 'string' || !isObj(m.event_payload)) {
      ws.violations.push(`${method}: metadata needs a string event_type and an object event_payload`);
      return fail('invalid_metadata_format');
    }
  }
  return undefined;
}

function messageJson(ws: Workspace, m: FakeMessage, includeMetadata: boolean): Record<string, unknown> {
  const replies = ws.messages.filter((r) => r.channel === m.channel && r.threadTs === m.ts && r.ts !== m.ts);
  return {
    type: 'message',
    ...(m.botId && m.seeded ? { subtype: 'bot_message' } : {}),
    user: m.user,
    text: m.text,
    ts: m.ts,
    ...(m.team ? { team: m.team } : {}),
    ...(m.botId ? { bot_id: m.botId } : {}),
    ...(m.appId ? { app_id: m.appId } : {}),
    ...(m.blocks ? { blocks: m.blocks } : {}),
    ...(m.attachments ? { attachments: m.attachments } : {}),
    ...(m.files ? { files: m.files.map((f) => ({ id: f.id, name: f.name, title: f.title ?? f.name })) } : {}),
    ...(m.threadTs ? { thread_ts: m.threadTs } : {}),
    ...(replies.length > 0 ? { thread_ts: m.ts, reply_count: replies.length, latest_reply: replies.at(-1)?.ts } : {}),
    ...(m.edited ? { edited: m.edited } : {}),
    ...(includeMetadata && m.metadata ? { metadata: m.metadata } : {}),
  };
}

function paginate(ws: Workspace, list: FakeMessage[], args: Record<string, unknown>): Answer {
  const limit = Math.min(Math.max(Number(args.limit ?? 1000) || 1000, 1), 1000);
  const cursor = str(args.cursor);
  const offset = cursor ? Number(Buffer.from(cursor, 'base64').toString('utf8').replace(/^offset:/, '')) || 0 : 0;
  const page = list.slice(offset, offset + limit);
  const hasMore = offset + limit < list.length;
  return ok({
    messages: page.map((m) => messageJson(ws, m, truthy(args.include_all_metadata))),
    has_more: hasMore,
    response_metadata: { next_cursor: hasMore ? Buffer.from(`offset:${offset + limit}`).toString('base64') : '' },
  });
}

export function chatMethods(ws: Workspace): Record<string, MethodHandler> {
  return {
    'chat.postMessage': ({ method, args, team }) => {
      const requested = str(args.channel);
      if (!requested) return fail('channel_not_found');
      const channel = /^[UW]/.test(requested) ? `D${requested}` : requested;
      const refused = checkMessageContent(ws, method, args, true);
      if (refused) return refused;
      const threadTs = str(args.thread_ts);
      const message: FakeMessage = {
        channel,
        ts: ws.nextTs(),
        ...(threadTs ? { threadTs } : {}),
        user: team.botUserId,
        botId: team.botId,
        appId: team.appId,
        team: team.teamId,
        text: String(args.text ?? args.markdown_text ?? ''),
        ...(Array.isArray(args.blocks) ? { blocks: args.blocks } : {}),
        ...(Array.isArray(args.attachments) ? { attachments: args.attachments } : {}),
        ...(isObj(args.metadata) ? { metadata: args.metadata as FakeMessage['metadata'] } : {}),
        updates: 0,
        seeded: false,
      };
      ws.messages.push(message);
      return ok({ channel, ts: message.ts, message: messageJson(ws, message, true) });
    },
    'chat.update': ({ method, args, team }) => {
      const channel = str(args.channel);
      if (!channel) return fail('channel_not_found');
      const message = ws.findMessage(channel, str(args.ts));
      if (!message) return fail('message_not_found');
      if (message.user !== team.botUserId) return fail('cant_update_message');
      if (args.text === undefined && args.blocks === undefined && args.attachments === undefined && args.markdown_text === undefined) {
        return fail('no_text');
      }
      const refused = checkMessageContent(ws, method, args, false);
      if (refused) return refused;
      if (args.text !== undefined || args.markdown_text !== undefined) message.text = String(args.text ?? args.markdown_text);
      if (Array.isArray(args.blocks)) message.blocks = args.blocks;
      if (Array.isArray(args.attachments)) message.attachments = args.attachments;
      if (isObj(args.metadata)) message.metadata = args.metadata as FakeMessage['metadata'];
      message.edited = { user: team.botUserId, ts: ws.nextTs() };
      message.updates += 1;
      return ok({ channel, ts: message.ts, text: message.text, message: messageJson(ws, message, true) });
    },
    'chat.postEphemeral': ({ method, args }) => {
      const channel = str(args.channel);
      if (!channel) return fail('channel_not_found');
      const user = str(args.user);
      if (!user) return fail('user_not_in_channel');
      const refused = checkMessageContent(ws, method, args, true);
      if (refused) return refused;
      const threadTs = str(args.thread_ts);
      const ephemeral: FakeEphemeral = {
        channel,
        user,
        messageTs: ws.nextTs(),
        ...(threadTs ? { threadTs } : {}),
        text: String(args.text ?? ''),
        ...(Array.isArray(args.blocks) ? { blocks: args.blocks } : {}),
      };
      ws.ephemerals.push(ephemeral);
      return ok({ message_ts: ephemeral.messageTs });
    },
    'chat.getPermalink': ({ args, team }) => {
      const channel = str(args.channel);
      const ts = str(args.message_ts);
      if (!channel) return fail('channel_not_found');
      if (!ts) return fail('message_not_found');
      const message = ws.messages.find((m) => m.channel === channel && m.ts === ts);
      const thread = message?.threadTs && message.threadTs !== ts ? `?thread_ts=${message.threadTs}&cid=${channel}` : '';
      return ok({ channel, permalink: `https://${team.domain}.slack.test/archives/${channel}/p${ts.replace('.', '')}${thread}` });
    },
    'conversations.open': ({ args }) => {
      const users = str(args.users)?.split(',').map((u) => u.trim()).filter(Boolean) ?? [];
      const existing = str(args.channel);
      if (existing) return ok({ channel: { id: existing } });
      if (users.length === 0) return fail('users_list_not_supplied');
      const id = users.length === 1 ? `D${users[0]}` : `G${users.join('').slice(0, 20)}`;
      return ok({ channel: { id, ...(truthy(args.return_im) ? { is_im: users.length === 1, user: users[0] } : {}) } });
    },
    'conversations.replies': ({ args }) => {
      const channel = str(args.channel);
      const ts = str(args.ts);
      if (!channel) return fail('channel_not_found');
      if (!ts) return fail('thread_not_found');
      const thread = ws.messages
        .filter((m) => m.channel === channel && (m.ts === ts || m.threadTs === ts))
        .sort((a, b) => Number(a.ts) - Number(b.ts));
      return paginate(ws, thread, args);
    },
  };
}
