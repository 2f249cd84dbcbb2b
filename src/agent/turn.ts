// One turn of the agent for one trigger: load the chat, run the tool loop, store and post the answer.
import type Anthropic from '@anthropic-ai/sdk';
import type { Logger } from 'pino';
import type { ZodType } from 'zod';
import type { Config } from '../config.js';
import { failure } from '../errors.js';
import { isPlatformError } from '@verdict/contract/errors';
import type { Platform } from '@verdict/contract/platform';
import { recordActivity } from '../store/activity.js';
import { sessionFacts } from '../store/agent-sessions.js';
import { getTriggerWithChat } from '../store/chats.js';
import type { Db } from '../store/db.js';
import { appendMessage, listMessages } from '../store/messages.js';
import { createPost } from '../store/posts.js';
import type { Chat, StoredMessage, Trigger, Turn } from '../store/tables.js';
import { setTriggerStatus } from '../store/triggers.js';
import { finishTurn, recordModelCall, startTurn } from '../store/turns.js';
import { buildRequest, toMessageParams } from './conversation.js';
import { boundInbound, INBOUND_LIMITS } from './input-limits.js';
import { withFinalCost } from './tools/benchmark-analyze.js';
import { describeModelFailure, usageOf, type ModelClient } from './model.js';
import { costUsd, pricesFor } from './pricing.js';
import { partsFromStored, type Reply, type ReplyPart } from './reply.js';
import { sessionStatusFor, type SessionStatus } from './session-status.js';
import { handlerFor, type SkipTurn } from './triggers/index.js';
import { ToolError, type AgentTool, type ToolContext, type ToolDefinition, type ToolResult } from './tools/tool.js';

type Block = Anthropic.Messages.ContentBlockParam;

/** Cap on model calls in one turn, so a confused model cannot spin forever on the user's money. */
const MAX_MODEL_CALLS_PER_TURN = 16;

/** Where a turn's posts go once they are in the outbox (src/slack/poster.ts renders and delivers them). */
export interface PostDelivery {
  /** Delivers the chat's pending posts, in order; throws on a transient failure so the job retries. */
  deliverPending(teamId: string, chatId: string): Promise<void>;
  /** A message only `user` of workspace `teamId` sees; not stored, never retried. */
  postEphemeral(channel: string, user: string, text: string, threadTs: string | undefined, teamId: string): Promise<void>;
}

export interface TurnDeps {
  db: Db;
  config: Config;
  logger: Logger;
  model: ModelClient;
  platform: Platform;
  sandbox: boolean;
  /** The in-process platform's real inference engine; messages name it instead of "sandbox". */
  engine?: string | null;
  poster: PostDelivery;
  system: string;
  tools: readonly AgentTool<never>[];
  toolDefinitions: readonly ToolDefinition[];
  /** Runs inside the transaction that ends a turn: what it schedules exists once the turn is recorded, at no commit of its own (the owner's Home refresh). */
  onConclude?(trx: Db, chat: Chat): Promise<void>;
  /** Runs after a turn's writes are committed and its posts delivered (the live plan follows); a failure is only logged. */
  afterTurn?(chat: Chat): Promise<void>;
  /** The thread's agent-session status in Slack (src/slack/agent-session.ts); queued, never fails a turn. */
  sessions?: SessionStatusSink;
  /**
   * OAuth mode: whether the workspace has an installation. Without one a turn does not start (no
   * model call, no post); its trigger stays queued until a reinstall enqueues it again.
   */
  workspaceInstalled?(teamId: string): Promise<boolean>;
  /** The bot token that reads the workspace's shared files; unset = SLACK_BOT_TOKEN. */
  slackToken?(teamId: string): Promise<string | undefined>;
}

/** Where a turn reports its thread's session status. */
export interface SessionStatusSink {
  set(chat: Chat, status: SessionStatus): void;
}

export interface JobInfo {
  attempts: number;
  maxAttempts: number;
}

/** Thrown to make the job engine retry the turn later (with backoff) without telling the user yet. */
export class RetryLater extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'RetryLater';
  }
}

/**
 * Runs (or resumes) the turn of a trigger. Safe to call again after a crash at any point: the turn,
 * its messages and its posts are keyed by the trigger, tool launches carry idempotency keys, and
 * posts already delivered are not sent again.
 */
export async function runTurn(deps: TurnDeps, triggerId: string, job: JobInfo): Promise<void> {
  const found = await getTriggerWithChat(deps.db, triggerId);
  if (!found) {
    deps.logger.warn({ triggerId }, 'trigger not found; skipping');
    return;
  }
  const { trigger } = found;
  const log = deps.logger.child({ triggerId, teamId: trigger.team_id, chatId: trigger.chat_id });
  const chat = found.chat?.team_id === trigger.team_id ? found.chat : undefined;
  if (!chat) {
    log.error('chat of trigger not found');
    return;
  }
  if (trigger.status === 'done' || trigger.status === 'failed') {
    await deps.poster.deliverPending(chat.team_id, chat.id);
    return;
  }
  if (deps.workspaceInstalled && !(await deps.workspaceInstalled(chat.team_id))) {
    log.info('the workspace has no installation: the turn waits for a reinstall');
    return;
  }
  const { turn } = await startTurn(deps.db, {
    teamId: chat.team_id,
    chatId: chat.id,
    triggerId: trigger.id,
    model: deps.config.agent.model,
  });
  const handler = handlerFor(trigger.kind);
  const ctx: ToolContext = {
    db: deps.db,
    config: deps.config,
    logger: log.child({ turnId: turn.id }),
    platform: deps.platform,
    sandbox: deps.sandbox,
    engine: deps.engine ?? null,
    chat,
    turn,
    trigger,
    authority: handler.authority,
    ...(deps.slackToken ? { slackToken: () => deps.slackToken!(chat.team_id) } : {}),
  };

  const refusal = handler.authorize(ctx);
  if (refusal) {
    ctx.logger.info({ code: refusal.code }, 'trigger refused before its turn');
    if (trigger.user_id) {
      await deps.poster
        .postEphemeral(chat.channel_id, trigger.user_id, refusal.message, chat.thread_ts, chat.team_id)
        .catch((error: unknown) => ctx.logger.warn({ err: error }, 'could not send an ephemeral refusal'));
    }
    await finishTurn(deps.db, chat.team_id, turn.id, 'completed', 'refused');
    await setTriggerStatus(deps.db, chat.team_id, trigger.id, 'done', 'refused');
    return;
  }

  const rows = await listMessages(deps.db, chat.team_id, chat.id);
  if (handler.reply) {
    // A turn code answers (the Stop): prepare is idempotent, so a resumed turn simply runs it again.
    const prepared = await handler.prepare(ctx);
    if ('skip' in prepared) {
      await skipTurn(deps, ctx, prepared);
      return;
    }
    const direct = handler.reply(prepared.facts);
    if (!rows.some((row) => row.turn_id === turn.id)) {
      for (const [role, text] of [['user', handler.render(prepared.facts)], ['assistant', direct.text]] as const) {
        await appendMessage(deps.db, { teamId: chat.team_id, chatId: chat.id, turnId: turn.id, role, content: [{ type: 'text', text }] });
      }
    }
    const reply: Reply = {
      to: chat.owner_user_id,
      text: direct.text,
      parts: [],
      origin: deps.engine ? { kind: 'engine', name: deps.engine } : deps.sandbox ? { kind: 'sandbox' } : null,
    };
    await concludeTurn(deps, ctx, { postKey: 'reply', reply, summary: direct.summary, error: null });
    return;
  }
  if (!rows.some((row) => row.turn_id === turn.id)) {
    const prepared = await handler.prepare(ctx);
    if ('skip' in prepared) {
      await skipTurn(deps, ctx, prepared);
      return;
    }
    const text = handler.render(prepared.facts);
    rows.push(
      await appendMessage(deps.db, {
        teamId: chat.team_id,
        chatId: chat.id,
        turnId: turn.id,
        role: 'user',
        content: [{ type: 'text', text: boundInbound(text, INBOUND_LIMITS.turnInput) }],
      }),
    );
  }

  deps.sessions?.set(chat, 'processing');
  for (let calls = 0; ; ) {
    const last = rows.at(-1)!;
    if (last.role === 'assistant' && last.turn_id === turn.id) {
      const toolUses = (last.content as Block[]).filter(
        (b): b is Anthropic.Messages.ToolUseBlockParam => b.type === 'tool_use',
      );
      if (toolUses.length === 0 || last.stop_reason !== 'tool_use') break;
      rows.push(await runTools(deps, ctx, toolUses, job));
      continue;
    }
    if (calls >= MAX_MODEL_CALLS_PER_TURN) {
      ctx.logger.warn('turn reached its model-call cap');
      break;
    }
    calls += 1;
    const request = buildRequest({
      model: deps.config.agent.model,
      system: deps.system,
      tools: deps.toolDefinitions,
      messages: toMessageParams(rows),
    });
    let response;
    try {
      response = await deps.model.create(request);
    } catch (error) {
      await handleModelFailure(deps, ctx, error, job);
      return;
    }
    const usage = usageOf(response);
    const cost = costUsd(usage, pricesFor(response.model || deps.config.agent.model, deps.config.agent.priceOverrides));
    rows.push(
      await recordModelCall(deps.db, {
        teamId: chat.team_id,
        chatId: chat.id,
        turnId: turn.id,
        usage,
        costUsd: cost,
        content: response.content as unknown[],
        stopReason: response.stop_reason,
      }),
    );
  }

  const turnRows = rows.filter((row) => row.turn_id === turn.id);
  const answer = finalText(turnRows);
  const parts = await withFinalCost(ctx, turnRows.flatMap((row) => partsFromStored(row.attachments)));
  const reply: Reply = {
    to: trigger.user_id ?? chat.owner_user_id,
    text: answer,
    parts,
    origin: deps.engine ? { kind: 'engine', name: deps.engine } : deps.sandbox ? { kind: 'sandbox' } : null,
  };
  await concludeTurn(deps, ctx, { postKey: 'reply', reply, summary: answer, error: null });
}

/**
 * Ends the turn in one transaction (its post in the outbox, its status, its Activity entry, the
 * trigger done or failed), then delivers the post and runs the after-turn hook.
 */
async function concludeTurn(
  deps: TurnDeps,
  ctx: ToolContext,
  end: { postKey: string; reply: Reply; summary: string; error: string | null },
): Promise<void> {
  const { chat, trigger, turn } = ctx;
  const facts = await deps.db.transaction().execute(async (trx) => {
    const post = await createPost(trx, {
      teamId: chat.team_id,
      chatId: chat.id,
      turnId: turn.id,
      postKey: `turn:${turn.id}:${end.postKey}`,
      channelId: chat.channel_id,
      threadTs: chat.thread_ts,
      reply: end.reply,
    });
    const finished = await finishTurn(trx, chat.team_id, turn.id, end.error ? 'failed' : 'completed', end.error);
    await recordActivity(trx, { chat, turn: finished, trigger, summary: end.summary, postId: post.id });
    await setTriggerStatus(trx, chat.team_id, trigger.id, end.error ? 'failed' : 'done', end.error);
    await deps.onConclude?.(trx, chat);
    // What the thread waits on once its posts are out: every write of the turn is in by now.
    return deps.sessions ? sessionFacts(trx, chat.team_id, chat.id) : undefined;
  });
  await deps.poster.deliverPending(chat.team_id, chat.id);
  // After the posts: the session shows what the thread waits on now (see sessionStatusFor).
  if (facts) deps.sessions?.set(chat, sessionStatusFor(facts));
  try {
    await deps.afterTurn?.(chat);
  } catch (error) {
    ctx.logger.warn({ err: error }, 'after-turn step failed');
  }
}

/** Ends a trigger that needs no turn, without a model call or a post. */
async function skipTurn(deps: TurnDeps, ctx: ToolContext, prepared: SkipTurn): Promise<void> {
  const { chat, trigger, turn } = ctx;
  ctx.logger.warn({ reason: prepared.skip }, 'trigger needs no turn; ended without a model call');
  await deps.db.transaction().execute(async (trx) => {
    await prepared.onSkip?.(trx);
    await finishTurn(trx, chat.team_id, turn.id, 'completed', prepared.skip);
    await setTriggerStatus(trx, chat.team_id, trigger.id, 'done', prepared.skip);
  });
}

async function runTools(
  deps: TurnDeps,
  ctx: ToolContext,
  toolUses: Anthropic.Messages.ToolUseBlockParam[],
  job: JobInfo,
): Promise<StoredMessage> {
  const results: Block[] = [];
  const parts: ReplyPart[] = [];
  for (const use of toolUses) {
    const result = await runTool(deps, ctx, use, job);
    results.push({
      type: 'tool_result',
      tool_use_id: use.id,
      content: result.content,
      ...(result.isError ? { is_error: true } : {}),
    });
    if (result.parts) parts.push(...result.parts);
  }
  return appendMessage(deps.db, {
    teamId: ctx.chat.team_id,
    chatId: ctx.chat.id,
    turnId: ctx.turn.id,
    role: 'user',
    content: results,
    parts,
  });
}

async function runTool(deps: TurnDeps, ctx: ToolContext, use: Anthropic.Messages.ToolUseBlockParam, job: JobInfo): Promise<ToolResult> {
  const tool = deps.tools.find((t) => t.name === use.name);
  if (!tool) return { content: failure('tool_unknown', { name: use.name }).message, isError: true };
  const parsed = (tool.input as unknown as ZodType).safeParse(use.input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const detail = `${issue?.path.join('.') || 'input'} ${issue?.message ?? ''}`;
    return { content: failure('tool_invalid_input', { name: use.name, detail }).message, isError: true };
  }
  const started = Date.now();
  try {
    const result = await (tool as AgentTool<unknown>).run(parsed.data, { ...ctx, toolUseId: use.id });
    ctx.logger.info({ tool: use.name, ms: Date.now() - started, isError: result.isError ?? false }, 'tool ran');
    return result;
  } catch (error) {
    // A platform outage during a turn nobody is waiting on: retry the whole turn later (it resumes at
    // this tool call; launches carry idempotency keys) rather than let the model give up on the plan.
    if (isPlatformError(error) && error.retryable && isAutomatic(ctx.trigger) && job.attempts < job.maxAttempts) {
      ctx.logger.warn({ tool: use.name, code: error.code, attempt: job.attempts }, 'platform unavailable; the turn will be retried');
      throw new RetryLater(`platform unavailable: ${error.message}`);
    }
    if (error instanceof ToolError || isPlatformError(error)) {
      ctx.logger.info({ tool: use.name, code: (error as { code: string }).code }, 'tool returned an error');
      return { content: `${(error as Error).message}`, isError: true };
    }
    throw error;
  }
}

/** Turns woken by the platform or the sweep: no person is waiting, so the job engine may retry them. */
function isAutomatic(trigger: Trigger): boolean {
  return handlerFor(trigger.kind).automatic;
}

async function handleModelFailure(deps: TurnDeps, ctx: ToolContext, error: unknown, job: JobInfo): Promise<void> {
  const failure = describeModelFailure(error);
  if (!failure) throw error;
  if (failure.transient && isAutomatic(ctx.trigger) && job.attempts < job.maxAttempts) {
    ctx.logger.warn({ reason: failure.reason, attempt: job.attempts }, 'model unavailable; the turn will be retried');
    throw new RetryLater(failure.reason);
  }
  ctx.logger.error({ reason: failure.reason }, 'model call failed; telling the thread');
  const reply: Reply = {
    to: ctx.trigger.user_id ?? ctx.chat.owner_user_id,
    text: `I couldn't reach the model: ${failure.reason}, even after retrying. Nothing is lost: press Retry or reply in this thread and I'll pick up where I stopped.`,
    parts: [{ kind: 'retry', triggerId: ctx.trigger.id }],
  };
  await concludeTurn(deps, ctx, { postKey: 'failure', reply, summary: `Model unavailable: ${failure.reason}`, error: failure.reason });
}

/** The text the agent wrote at the end of the turn (its last assistant message with text). */
export function finalText(turnRows: readonly StoredMessage[]): string {
  for (let i = turnRows.length - 1; i >= 0; i -= 1) {
    const row = turnRows[i]!;
    if (row.role !== 'assistant') continue;
    const text = (row.content as Block[])
      .flatMap((b) => (b.type === 'text' ? [b.text] : []))
      .join('\n')
      .trim();
    if (text) return text;
  }
  return 'Done.';
}

export type { Chat, Turn };
