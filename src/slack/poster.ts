// Delivers a chat's pending posts to Slack exactly once, in order, paced per channel: each stored
// reply is rendered (src/slack/blocks/reply.ts) when it is sent, and again when a choice is made in it.
import type { ChatPostMessageArguments } from '@slack/web-api';
import type { Logger } from 'pino';
import { createScrubber, type SecretScrubber } from '../logger.js';
import { madeChoices, type ButtonFeedback } from '../store/button-choices.js';
import type { Db } from '../store/db.js';
import {
  getPost,
  isLegacyPayload,
  markPostDelivered,
  markPostFailed,
  pendingPosts,
  reservePostSlot,
  setPostPermalink,
  startPostAttempt,
  type StoredPostPayload,
} from '../store/posts.js';
import type { Post } from '../store/tables.js';
import { ensureComparisonFile, getComparisonFile, openComparisonFiles, setPostRenderLevel, type ComparisonFile } from '../store/comparison-files.js';
import { retireChosen, type MadeChoice } from './blocks/button-choices.js';
import { feedbackAsPlainButtons } from './blocks/feedback.js';
import { RENDER_LEVELS, renderReply, type RenderLevel } from './blocks/reply.js';
import { chartNotes, comparisonPartOf, shareComparisonChart } from './comparison-chart.js';
import { SLACK_PACE, type SlackPace } from './limits.js';
import { asWorkspaceClients, isDeadTokenError, WorkspaceUnavailable, type SlackClients, type WorkspaceClients } from './workspace-clients.js';

const POST_METADATA_TYPE = 'verdict_bot_post';

/**
 * The message for a stored post, with the choices made in it retired: a typed reply is rendered; a
 * post stored as blocks by an earlier version is sent as it was stored. `level` is the fallback
 * level Slack accepted (src/slack/blocks/reply.ts); `notes` are added at its end.
 */
export function renderPost(
  payload: StoredPostPayload,
  chosen: readonly MadeChoice[] = [],
  options: { level?: RenderLevel; notes?: readonly string[] } = {},
): { text: string; blocks?: unknown[] } {
  if (!isLegacyPayload(payload)) return renderReply(payload.reply, { chosen, ...options });
  if (!payload.blocks || options.level === 'plain') return { text: payload.text };
  return { text: payload.text, blocks: chosen.length > 0 ? retireChosen(payload.blocks, chosen) : payload.blocks };
}

export { createSlackClients, type SlackClients } from './workspace-clients.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface SlackErrorLike {
  code?: string;
  retryAfter?: number;
  data?: { error?: string };
}

/** A channel slot reserved ahead for the next message; used once, then each message reserves its own. */
interface ReservedSlot {
  waitMs: number | undefined;
}

/**
 * A message's permalink on its workspace's link origin, in the form chat.getPermalink answers: a
 * reply in a thread carries `thread_ts` and `cid` (the forms that method's reference shows).
 */
export function messagePermalink(origin: string, channel: string, ts: string, threadTs: string | null): string {
  const link = `${origin}/archives/${channel}/p${ts.replace('.', '')}`;
  return threadTs && threadTs !== ts ? `${link}?thread_ts=${threadTs}&cid=${channel}` : link;
}

/** The origin of a permalink Slack gave (`https://<workspace>.slack.com`), if it is one. */
function permalinkOrigin(permalink: string): string | undefined {
  try {
    const url = new URL(permalink);
    return url.protocol === 'https:' && /\/archives\//.test(url.pathname) ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

export class SlackPoster {
  private readonly workspaces: WorkspaceClients;
  /** Each workspace's permalink origin, learned from the first permalink Slack gave for it. */
  private readonly permalinkOrigins = new Map<string, string>();

  /**
   * `clients`: one token's clients, or each workspace's (OAuth mode); `scrubber`: every post and
   * ephemeral is scrubbed of the bot's secrets on its way out.
   */
  constructor(
    private readonly db: Db,
    clients: SlackClients | WorkspaceClients,
    private readonly logger: Logger,
    private readonly scrubber: SecretScrubber = createScrubber(),
    private readonly slackPace: SlackPace = SLACK_PACE,
    /** `comparisonCharts: false` leaves verdicts without their chart (benchmarks only). */
    private readonly options: { comparisonCharts?: boolean } = {},
  ) {
    this.workspaces = asWorkspaceClients(clients);
  }

  /** The workspace's clients; throws {@link WorkspaceUnavailable} when it has no installation. */
  private async clientsOf(teamId: string): Promise<SlackClients> {
    const clients = await this.workspaces.forTeam(teamId);
    if (!clients) throw new WorkspaceUnavailable(teamId, 'not installed');
    return clients;
  }

  /** In OAuth mode a token Slack no longer takes means the workspace is gone: its post waits for a reinstall. */
  private unavailable(teamId: string, error: unknown): WorkspaceUnavailable | undefined {
    if (!this.workspaces.perWorkspace || !isDeadTokenError(error)) return undefined;
    return new WorkspaceUnavailable(teamId, (error as SlackErrorLike).data?.error ?? 'token refused');
  }

  /**
   * Posts every pending post of the chat. A post whose earlier attempt may have reached Slack is
   * first looked up in the thread by its metadata, so a crash between Slack's answer and our
   * record never produces a second copy. Throws on transient failures so the job is retried.
   */
  async deliverPending(teamId: string, chatId: string): Promise<void> {
    const posts = await pendingPosts(this.db, teamId, chatId);
    const charts = await openComparisonFiles(this.db, teamId, chatId);
    if (posts.length === 0 && charts.length === 0) return;
    const clients = await this.clientsOf(teamId);
    for (const post of posts) {
      await this.deliver(post, clients);
    }
    if (this.options.comparisonCharts === false) return;
    // A comparison delivered just now registered its chart: read the open charts again only then.
    const registered = posts.some((post) => comparisonPartOf(post.payload as unknown as StoredPostPayload));
    await this.deliverComparisonCharts(teamId, registered ? await openComparisonFiles(this.db, teamId, chatId) : charts, clients);
  }

  /**
   * Shares the chart of each delivered comparison post of the chat that is not shared yet, as a
   * message in the thread right after the verdict (src/slack/comparison-chart.ts).
   */
  private async deliverComparisonCharts(teamId: string, files: readonly ComparisonFile[], clients: SlackClients): Promise<void> {
    for (const file of files) {
      const post = await getPost(this.db, teamId, file.postId);
      if (!post) continue;
      await shareComparisonChart(
        {
          db: this.db,
          writer: clients.writer,
          reader: clients.reader,
          logger: this.logger,
          pace: (team, channel) => this.pace(team, channel),
          refreshVerdict: (team, postId) => this.refreshPost(team, postId),
        },
        file,
        post,
      );
    }
  }

  /**
   * Posts a message, stepping down one fallback level (src/slack/blocks/reply.ts RenderLevel) each
   * time Slack answers invalid_blocks: the data table as text, then every table as text, then the
   * text alone. Levels that render the same message as the one refused are skipped. Returns the
   * ts and the level Slack took; throws what is not a block refusal.
   */
  private async postWithFallbacks(
    post: Post,
    base: Omit<ChatPostMessageArguments, 'text' | 'blocks'>,
    clients: SlackClients,
    slot: ReservedSlot,
  ): Promise<{ ts: string; level: RenderLevel }> {
    const payload = post.payload as unknown as StoredPostPayload;
    let refused: string | undefined;
    // Once Slack refused the feedback buttons, every level sends them as plain buttons.
    let plainFeedback = false;
    for (const level of RENDER_LEVELS) {
      const message = this.scrubber.scrubValue(renderPost(payload, [], { level }));
      let blocks = message.blocks && message.blocks.length > 0 ? message.blocks : undefined;
      if (blocks && plainFeedback) blocks = feedbackAsPlainButtons(blocks) ?? blocks;
      for (;;) {
        const key = JSON.stringify(blocks ?? null);
        if (refused !== undefined && key === refused) break;
        try {
          const result = await this.postMessageRespectingRateLimit(post, { ...base, text: message.text, ...(blocks ? { blocks } : {}) } as ChatPostMessageArguments, clients, slot);
          return { ts: String(result.ts), level };
        } catch (error) {
          const e = error as SlackErrorLike;
          if (!(e.code === 'slack_webapi_platform_error' && e.data?.error === 'invalid_blocks' && blocks && level !== 'plain')) throw error;
          const swapped = { blocks: blocks as unknown };
          if (!plainFeedback && this.plainFeedbackFallback(post.id, swapped)) {
            plainFeedback = true;
            blocks = swapped.blocks as unknown[];
            continue;
          }
          this.logger.error({ postId: post.id, level, reason: 'invalid_blocks' }, 'slack refused the blocks; posting a plainer message');
          refused = key;
          break;
        }
      }
    }
    throw new Error('unreachable: the plain level always posts or throws');
  }

  /**
   * Where Slack refuses the verdict's feedback buttons (`invalid_blocks`: a workspace or client that
   * does not take `context_actions` yet), swaps them for two plain buttons with the same action ids
   * and values, so the same handler records the vote. True when the message changed and is worth
   * sending again; false when it holds no feedback buttons (the refusal has another cause).
   */
  private plainFeedbackFallback(postId: string, args: { blocks?: unknown }): boolean {
    const plain = Array.isArray(args.blocks) ? feedbackAsPlainButtons(args.blocks) : undefined;
    if (!plain) return false;
    this.logger.warn({ postId }, 'slack refused the feedback buttons; sending plain 👍 / 👎 buttons instead');
    args.blocks = plain;
    return true;
  }

  /** Sends one message in the channel's next slot: the one reserved with the attempt, then a new one per try. */
  private async postMessageRespectingRateLimit(post: Post, args: ChatPostMessageArguments, clients: SlackClients, slot: ReservedSlot) {
    for (let rateLimitedTries = 0; ; rateLimitedTries += 1) {
      if (slot.waitMs === undefined) await this.pace(post.team_id, post.channel_id);
      else if (slot.waitMs > 0) await sleep(slot.waitMs);
      slot.waitMs = undefined;
      try {
        return await clients.writer.chat.postMessage(args);
      } catch (error) {
        const e = error as SlackErrorLike;
        if (e.code === 'slack_webapi_rate_limited_error' && rateLimitedTries < 10) {
          // A 429 means Slack did not take the message, so sending it again is safe.
          this.logger.warn({ postId: post.id, retryAfter: e.retryAfter }, 'slack rate limited a post; waiting');
          await sleep(Math.max(1, e.retryAfter ?? 1) * 1000);
          continue;
        }
        throw error;
      }
    }
  }

  private async deliver(post: Post, clients: SlackClients): Promise<void> {
    // The attempt is counted before anything is sent, with the channel's posting slot reserved for it.
    const { attempt, slotWaitMs } = await startPostAttempt(this.db, { teamId: post.team_id, postId: post.id, channelId: post.channel_id }, this.slackPace.postIntervalMs);
    const slot: ReservedSlot = { waitMs: slotWaitMs };
    if (attempt > 1) {
      const existingTs = await this.findPosted(post, clients).catch((error: unknown) => {
        throw this.unavailable(post.team_id, error) ?? error;
      });
      if (existingTs) {
        await this.recordDelivered(post, existingTs, clients);
        return;
      }
    }
    if (comparisonPartOf(post.payload as unknown as StoredPostPayload)) {
      // Registered before the post is sent: once it is delivered, its chart is shared (once).
      await ensureComparisonFile(this.db, { teamId: post.team_id, chatId: post.chat_id, postId: post.id });
    }
    const base = {
      channel: post.channel_id,
      thread_ts: post.thread_ts,
      unfurl_links: false,
      unfurl_media: false,
      metadata: { event_type: POST_METADATA_TYPE, event_payload: { post_key: post.post_key } },
    };
    try {
      const { ts, level } = await this.postWithFallbacks(post, base, clients, slot);
      await this.recordDelivered(post, ts, clients);
      // Null means full: only a fallback costs a write.
      if (level !== 'full') await setPostRenderLevel(this.db, post.team_id, post.id, level);
    } catch (error) {
      const e = error as SlackErrorLike;
      const gone = this.unavailable(post.team_id, error);
      if (gone) throw gone;
      if (e.code === 'slack_webapi_platform_error') {
        const reason = e.data?.error ?? 'unknown_error';
        this.logger.error({ postId: post.id, reason }, 'slack refused a post');
        await markPostFailed(this.db, post.team_id, post.id, reason);
        return;
      }
      throw error;
    }
  }

  /**
   * Records the ts at once (its buttons can be clicked from now on). The permalink goes with it once
   * the workspace's link origin is known from a permalink Slack gave; until then it is asked of
   * Slack (chat.getPermalink) and written after.
   */
  private async recordDelivered(post: Post, ts: string, clients: SlackClients): Promise<void> {
    const origin = this.permalinkOrigins.get(post.team_id);
    await markPostDelivered(this.db, post.team_id, post.id, ts, origin ? messagePermalink(origin, post.channel_id, ts, post.thread_ts) : null);
    if (origin) return;
    const permalink = await this.permalink(post.channel_id, ts, clients);
    if (!permalink) return;
    await setPostPermalink(this.db, post.team_id, post.id, permalink);
    const learned = permalinkOrigin(permalink);
    if (learned) this.permalinkOrigins.set(post.team_id, learned);
  }

  private async pace(teamId: string, channel: string): Promise<void> {
    // The slot is reserved in Postgres before waiting, so concurrent turns posting to one channel,
    // in this process or in another replica, queue up instead of bursting.
    const wait = await reservePostSlot(this.db, teamId, channel, this.slackPace.postIntervalMs);
    if (wait > 0) await sleep(wait);
  }

  private async findPosted(post: Post, clients: SlackClients): Promise<string | undefined> {
    let cursor: string | undefined;
    for (let page = 0; page < 20; page += 1) {
      const result = await clients.reader.conversations.replies({
        channel: post.channel_id,
        ts: post.thread_ts,
        include_all_metadata: true,
        limit: 200,
        ...(cursor ? { cursor } : {}),
      });
      for (const message of result.messages ?? []) {
        const metadata = (message as { metadata?: { event_type?: string; event_payload?: { post_key?: string } } }).metadata;
        if (metadata?.event_type === POST_METADATA_TYPE && metadata.event_payload?.post_key === post.post_key) {
          return message.ts;
        }
      }
      cursor = result.response_metadata?.next_cursor || undefined;
      if (!cursor) return undefined;
    }
    return undefined;
  }

  private async permalink(channel: string, ts: string, clients: SlackClients): Promise<string | null> {
    try {
      const result = await clients.reader.chat.getPermalink({ channel, message_ts: ts });
      return result.permalink ?? null;
    } catch (error) {
      this.logger.warn({ err: error, channel }, 'could not fetch a permalink');
      return null;
    }
  }

  /** Ephemeral messages are not stored: they answer a click and are never retried. Nothing is sent to a workspace without an installation. */
  async postEphemeral(channel: string, user: string, text: string, threadTs: string | undefined, teamId: string): Promise<void> {
    const clients = await this.workspaces.forTeam(teamId);
    if (!clients) return;
    await clients.writer.chat.postEphemeral({ channel, user, text: this.scrubber.scrub(text), ...(threadTs ? { thread_ts: threadTs } : {}) });
  }

  /**
   * Rewrites a delivered post so that each choice made in it shows who chose what and when in place
   * of its buttons. Rebuilt from the outbox payload and the stored choices, so it is safe to repeat;
   * throws on a transient failure so the job retries.
   */
  async refreshChoices(teamId: string, postId: string): Promise<void> {
    const chosen = await madeChoices(this.db, teamId, postId);
    if (chosen.length === 0) return;
    await this.refreshPost(teamId, postId, chosen);
  }

  /**
   * Rewrites a delivered post as it stands: its choices made, its chart note, at the fallback level
   * Slack took it at. Safe to repeat; throws on a transient failure so the job retries.
   */
  private async refreshPost(teamId: string, postId: string, known?: readonly MadeChoice[]): Promise<void> {
    const post = await getPost(this.db, teamId, postId);
    if (!post?.slack_ts) return;
    const chosen = known ?? (await madeChoices(this.db, teamId, postId));
    const stored = RENDER_LEVELS.find((l) => l === post.render_level) ?? 'full';
    const notes = chartNotes(await getComparisonFile(this.db, teamId, postId));
    const clients = await this.clientsOf(teamId);
    // From the level it was posted at down: a post recovered after a crash has no level recorded.
    let plainFeedback = false;
    for (const level of RENDER_LEVELS.slice(RENDER_LEVELS.indexOf(stored))) {
      const message = renderPost(post.payload as unknown as StoredPostPayload, chosen, { level, notes });
      if (!message.blocks || message.blocks.length === 0) return;
      const update = { channel: post.channel_id, ts: post.slack_ts, text: this.scrubber.scrub(message.text), blocks: this.scrubber.scrubValue(message.blocks) as unknown[] };
      if (plainFeedback) update.blocks = feedbackAsPlainButtons(update.blocks) ?? update.blocks;
      try {
        try {
          await clients.writer.chat.update(update as never);
        } catch (error) {
          const e = error as SlackErrorLike;
          if (plainFeedback || !(e.code === 'slack_webapi_platform_error' && e.data?.error === 'invalid_blocks' && this.plainFeedbackFallback(postId, update))) throw error;
          plainFeedback = true;
          await clients.writer.chat.update(update as never);
        }
        if (level !== stored) await setPostRenderLevel(this.db, teamId, postId, level);
        return;
      } catch (error) {
        const e = error as SlackErrorLike;
        const gone = this.unavailable(teamId, error);
        if (gone) throw gone;
        if (e.code === 'slack_webapi_platform_error' && e.data?.error === 'invalid_blocks') continue;
        if (e.code === 'slack_webapi_platform_error' && ['message_not_found', 'cant_update_message', 'channel_not_found'].includes(e.data?.error ?? '')) {
          this.logger.warn({ postId, reason: e.data?.error }, 'the message of a used button cannot be updated');
          return;
        }
        throw error;
      }
    }
  }

  /** Runs a button-feedback job: the message update after a choice, or an ephemeral answer to a click. */
  async buttonFeedback(feedback: ButtonFeedback): Promise<void> {
    if (feedback.kind === 'update') {
      await this.refreshChoices(feedback.teamId, feedback.postId);
      return;
    }
    await this.postEphemeral(feedback.channel, feedback.user, feedback.text, feedback.threadTs, feedback.teamId);
  }
}
