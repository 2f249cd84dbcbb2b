// The plan, live: one message per chat, a plan block with a task card per step, posted once and
// then rewritten with chat.update as the steps move.
//
// Why a message updated in place and not a stream (chat.startStream / appendStream / stopStream):
// a stream belongs to one live writer and is meant to be closed within a reply; this plan lives for
// the hours a training can take, across worker restarts and replicas, and a stopped stream cannot be
// reopened. A message is durable, its ts is stored (plan_messages), any worker can rewrite it, and a
// restart resumes where the last write left off. chat.update is tier 3 (50+ a minute per
// workspace): the message is rewritten at most every 3 s, and the workspace's plan messages at most
// every 1.5 s together (src/slack/limits.ts); a 429's Retry-After is honoured by rescheduling.
import type { Logger } from 'pino';
import { derivePlanView, pollIntervalMs, resourcesToWatch, type LiveResource, type PlanView, type StoredResource } from '../agent/plan-progress.js';
import { parsePlan } from '../agent/plan.js';
import { createScrubber, type SecretScrubber } from '../logger.js';
import type { Platform } from '@verdict/contract/platform';
import { getChat } from '../store/chats.js';
import type { Db } from '../store/db.js';
import type { Chat } from '../store/tables.js';
import { claimWrite, countPlanPostAttempt, holdWrites, readPlanMessage, recordPlanWrite, reserveUpdateSlot } from '../store/plan-messages.js';
import { reservePostSlot } from '../store/posts.js';
import { listChatResources } from '../store/resources.js';
import { buildPlanMessage } from './blocks/plan.js';
import { SLACK_PACE, type SlackPace } from './limits.js';
import { isDeadTokenError, type SlackClients } from './workspace-clients.js';

/** The metadata type of the plan message: how it is found again, and told apart from the step reports. */
export const PLAN_METADATA_TYPE = 'verdict_bot_plan';

/** A running step is read from the platform at least this often, and more often as it nears its finish, down to the update pace. */
export const PLAN_POLL_MAX_MS = 60_000;

/** The longest a sync sleeps for its workspace slot; beyond it, it is rescheduled to the slot. */
const MAX_SLOT_WAIT_MS = 2000;

/** A reserved slot not used within this long after its time is given up (its job never came back for it). */
const SLOT_VALID_MS = 60_000;

/** The key under which the workspace's chat.update calls of plan messages are paced (a slot, not a channel). */
const WORKSPACE_UPDATE_SLOT = '~plan-chat.update';
/** The key under which the time of the workspace's last plan chat.update is kept. */
const WORKSPACE_WRITTEN_KEY = '~plan-chat.update:written';

export interface PlanSyncResult {
  /** What happened, for logs and tests. */
  outcome: 'no_plan' | 'unchanged' | 'posted' | 'updated' | 'paced' | 'rate_limited' | 'refused' | 'uninstalled';
  /** Run the sync again after this long: the write had to wait, or a step is running. */
  againInMs?: number;
  view?: PlanView;
}

export interface PlanMessengerDeps {
  db: Db;
  /** The clients of the chat's workspace. */
  clients: SlackClients;
  /** OAuth mode: a token Slack refuses means the workspace was uninstalled (outcome `uninstalled`, nothing logged). */
  perWorkspace?: boolean;
  platform: Platform;
  logger: Logger;
  scrubber?: SecretScrubber;
  /** Slack's pace unless SLACK_PACE_SCALE says otherwise. */
  pace?: SlackPace;
}

interface SlackErrorLike {
  code?: string;
  retryAfter?: number;
  data?: { error?: string };
}

interface StoredState {
  /** The exact message last written, to skip a write that changes nothing. */
  rendered: string;
  view: PlanView;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function readLive(platform: Platform, kind: 'run' | 'training', id: string): Promise<LiveResource> {
  if (kind === 'run') {
    const run = await platform.getRun(id);
    return { status: run.status, questions: run.progress, estimatedFinishAt: run.estimatedFinishAt, webUrl: run.webUrl };
  }
  const job = await platform.getTraining(id);
  return { status: job.status, fraction: job.progress, steps: job.steps, estimatedFinishAt: job.estimatedFinishAt, webUrl: job.webUrl };
}

/**
 * Brings a chat's plan message up to date: derives the plan's view, and posts or rewrites the
 * message when what it shows changed, within the pace. Never throws for what Slack refuses
 * (it is logged and the message kept as it was); throws on a transport failure so the job retries.
 * `known` is the chat as the caller holds it now (the turn that just ended); else it is read.
 */
export async function syncPlanMessage(deps: PlanMessengerDeps, teamId: string, chatId: string, known?: Chat): Promise<PlanSyncResult> {
  const { db, logger } = deps;
  const scrubber = deps.scrubber ?? createScrubber();
  const pace = deps.pace ?? SLACK_PACE;
  const current = await readPlanMessage(db, teamId, chatId, pace.planUpdateIntervalMs, SLOT_VALID_MS);
  // Its turn among the workspace's plan updates is further on: nothing to read or draw before then.
  if (current.slotWaitMs !== undefined && current.slotWaitMs > MAX_SLOT_WAIT_MS) return { outcome: 'paced', againInMs: Math.ceil(current.slotWaitMs) };
  const chat = known ?? (await getChat(db, teamId, chatId));
  const plan = chat ? parsePlan(chat.plan) : undefined;
  if (!chat || !plan) return { outcome: 'no_plan' };

  const live = new Map<string, LiveResource>();
  for (const watched of resourcesToWatch(plan)) {
    try {
      live.set(watched.id, await readLive(deps.platform, watched.kind, watched.id));
    } catch (error) {
      // The plan shows the step as running without its progress; the next poll tries again.
      logger.warn({ err: error, chatId, resource: watched.id }, 'could not read a running step for the plan message');
    }
  }
  const stored = new Map<string, StoredResource>();
  for (const r of await listChatResources(db, teamId, chatId)) {
    if (r.kind !== 'run' && r.kind !== 'training') continue;
    const score = (r.details as { score?: unknown }).score;
    stored.set(r.platform_id, { status: r.status, score: typeof score === 'number' ? score : null, priceCharged: r.price_charged, webUrl: r.web_url });
  }
  const view = derivePlanView({ plan, live, stored });
  const again = view.running ? pollIntervalMs(view, Date.now(), pace.planUpdateIntervalMs, PLAN_POLL_MAX_MS) : undefined;
  const row = current.row;
  const textOnly = row?.text_only ?? false;
  const message = scrubber.scrubValue(buildPlanMessage(view, chat.owner_user_id));
  const rendered = JSON.stringify({ textOnly, message });
  const previous = row?.state as StoredState | null | undefined;
  if (row?.slack_ts && previous?.rendered === rendered) return { outcome: 'unchanged', view, ...(again ? { againInMs: again } : {}) };

  if (current.paceWaitMs > 0) return { outcome: 'paced', againInMs: Math.ceil(current.paceWaitMs), view };

  let slackTs = row?.slack_ts ?? undefined;
  if (!slackTs) {
    const attempt = await countPlanPostAttempt(db, { teamId, chatId, channelId: chat.channel_id, threadTs: chat.thread_ts });
    // An earlier attempt may have reached Slack before its answer was recorded: look for it first.
    if (attempt > 1) slackTs = await findPlanMessage(deps.clients, chat.channel_id, chat.thread_ts, chatId);
  }

  for (let blocks = !textOnly; ; blocks = false) {
    try {
      if (!slackTs) {
        const slot = await reservePostSlot(db, teamId, chat.channel_id, pace.postIntervalMs);
        if (slot > 0) await sleep(slot);
        const result = await deps.clients.writer.chat.postMessage({
          channel: chat.channel_id,
          thread_ts: chat.thread_ts,
          text: message.text,
          ...(blocks ? { blocks: message.blocks } : {}),
          unfurl_links: false,
          unfurl_media: false,
          metadata: { event_type: PLAN_METADATA_TYPE, event_payload: { chat_id: chatId } },
        });
        slackTs = String(result.ts);
        await recordPlanWrite(db, teamId, chatId, { slackTs, state: { rendered: JSON.stringify({ textOnly: !blocks, message }), view }, textOnly: !blocks });
        return { outcome: 'posted', view, ...(again ? { againInMs: again } : {}) };
      }
      // The slot reserved earlier, or the next free one. Many plans running in one workspace: this
      // one waits its turn as a job scheduled at its slot, not asleep in a worker.
      const slotWait = current.slotWaitMs ?? (await reserveUpdateSlot(db, teamId, chatId, WORKSPACE_UPDATE_SLOT, pace.workspaceUpdateIntervalMs));
      if (slotWait > MAX_SLOT_WAIT_MS) return { outcome: 'paced', againInMs: Math.ceil(slotWait), view };
      if (slotWait > 0) await sleep(slotWait);
      const spacing = await claimWorkspaceWrite(db, teamId, pace.workspaceUpdateIntervalMs);
      if (spacing > 0) return { outcome: 'paced', againInMs: Math.ceil(spacing), view };
      await deps.clients.writer.chat.update({
        channel: chat.channel_id,
        ts: slackTs,
        text: message.text,
        // Text only clears the blocks (an empty list), so a refused plan never lingers half-drawn.
        blocks: blocks ? message.blocks : [],
      });
      await recordPlanWrite(db, teamId, chatId, { slackTs, state: { rendered: JSON.stringify({ textOnly: !blocks, message }), view }, textOnly: !blocks });
      return { outcome: 'updated', view, ...(again ? { againInMs: again } : {}) };
    } catch (error) {
      const e = error as SlackErrorLike;
      if (e.code === 'slack_webapi_rate_limited_error') {
        // Slack took nothing: the same write is made again after its Retry-After.
        logger.warn({ chatId, retryAfter: e.retryAfter }, 'slack rate limited the plan message; waiting');
        const retryAfterMs = Math.max(1, e.retryAfter ?? 1) * 1000;
        // The whole workspace waits (chat.update is limited per workspace), whichever sync comes next.
        if (slackTs) await holdWrites(db, teamId, WORKSPACE_WRITTEN_KEY, pace.workspaceUpdateIntervalMs, retryAfterMs);
        return { outcome: 'rate_limited', againInMs: retryAfterMs, view };
      }
      // OAuth mode: the workspace is gone (uninstalled); a reinstall syncs the plan again.
      if (deps.perWorkspace && isDeadTokenError(error)) return { outcome: 'uninstalled', view };
      if (e.code === 'slack_webapi_platform_error') {
        const reason = e.data?.error ?? 'unknown_error';
        if (reason === 'invalid_blocks' && blocks) {
          logger.error({ chatId, reason }, 'slack refused the plan blocks; the plan is kept as text');
          continue;
        }
        logger.error({ chatId, reason }, 'slack refused the plan message');
        return { outcome: 'refused', view };
      }
      throw error;
    }
  }
}

/**
 * The workspace's plan writes stay an interval apart even when slots are used late: a claim that
 * finds the last write too recent waits for it (within the sleep a sync allows), or returns the wait.
 */
async function claimWorkspaceWrite(db: Db, teamId: string, intervalMs: number): Promise<number> {
  for (let tries = 0; ; tries += 1) {
    const wait = await claimWrite(db, teamId, WORKSPACE_WRITTEN_KEY, intervalMs);
    if (wait === 0 || wait > MAX_SLOT_WAIT_MS || tries === 2) return wait;
    await sleep(wait);
  }
}

async function findPlanMessage(clients: SlackClients, channel: string, threadTs: string, chatId: string): Promise<string | undefined> {
  let cursor: string | undefined;
  for (let page = 0; page < 20; page += 1) {
    const result = await clients.reader.conversations.replies({
      channel,
      ts: threadTs,
      include_all_metadata: true,
      limit: 200,
      ...(cursor ? { cursor } : {}),
    });
    for (const message of result.messages ?? []) {
      const metadata = (message as { metadata?: { event_type?: string; event_payload?: { chat_id?: string } } }).metadata;
      if (metadata?.event_type === PLAN_METADATA_TYPE && String(metadata.event_payload?.chat_id) === chatId) return message.ts;
    }
    cursor = result.response_metadata?.next_cursor || undefined;
    if (!cursor) return undefined;
  }
  return undefined;
}
