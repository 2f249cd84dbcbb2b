// Delivers a chat's pending posts to Slack exactly once, in order, paced per channel.
import { WebClient, type ChatPostMessageArguments } from '@slack/web-api';
import type { Logger } from 'pino';
import type { Db } from '../store/db.js';
import { markPostAttempt, markPostDelivered, markPostFailed, pendingPosts, reservePostSlot, type PostPayload } from '../store/posts.js';
import type { Post } from '../store/tables.js';
import { SLACK_LIMITS } from './limits.js';
import { formatLogArgs } from './log-format.js';

const POST_METADATA_TYPE = 'verdict_bot_post';

export interface SlackClients {
  /** Writes: never retried blindly; rate limits surface as errors the poster handles. */
  writer: WebClient;
  /** Reads: retried by the WebClient with backoff. */
  reader: WebClient;
}

export function createSlackClients(token: string, apiUrl: string | undefined, logger: Logger): SlackClients {
  const base = apiUrl ? { slackApiUrl: apiUrl } : {};
  const slackLogger = slackLoggerFrom(logger);
  return {
    writer: new WebClient(token, {
      ...base,
      logger: slackLogger,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      timeout: 15_000,
    }),
    reader: new WebClient(token, {
      ...base,
      logger: slackLogger,
      retryConfig: { retries: 4, factor: 2, minTimeout: 200, maxTimeout: 5_000 },
      timeout: 15_000,
    }),
  };
}

function slackLoggerFrom(logger: Logger) {
  const child = logger.child({ component: 'slack-web-api' });
  let level = 'info';
  return {
    debug: () => undefined,
    info: (...msg: unknown[]) => child.debug(formatLogArgs(msg)),
    warn: (...msg: unknown[]) => child.warn(formatLogArgs(msg)),
    error: (...msg: unknown[]) => child.error(formatLogArgs(msg)),
    setLevel: (l: string) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => undefined,
  } as never;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface SlackErrorLike {
  code?: string;
  retryAfter?: number;
  data?: { error?: string };
}

export class SlackPoster {
  constructor(
    private readonly db: Db,
    private readonly clients: SlackClients,
    private readonly logger: Logger,
  ) {}

  /**
   * Posts every pending post of the chat. A post whose earlier attempt may have reached Slack is
   * first looked up in the thread by its metadata, so a crash between Slack's answer and our
   * record never produces a second copy. Throws on transient failures so the job is retried.
   */
  async deliverPending(teamId: string, chatId: string): Promise<void> {
    for (const post of await pendingPosts(this.db, teamId, chatId)) {
      await this.deliver(post);
    }
  }

  private async deliver(post: Post): Promise<void> {
    const attempt = await markPostAttempt(this.db, post.team_id, post.id);
    if (attempt > 1) {
      const existingTs = await this.findPosted(post);
      if (existingTs) {
        await markPostDelivered(this.db, post.team_id, post.id, existingTs, await this.permalink(post.channel_id, existingTs));
        return;
      }
    }
    const payload = post.payload as unknown as PostPayload;
    const args = {
      channel: post.channel_id,
      thread_ts: post.thread_ts,
      text: payload.text,
      ...(payload.blocks && payload.blocks.length > 0 ? { blocks: payload.blocks } : {}),
      unfurl_links: false,
      unfurl_media: false,
      metadata: { event_type: POST_METADATA_TYPE, event_payload: { post_key: post.post_key } },
    } as ChatPostMessageArguments;

    for (let rateLimitedTries = 0; ; rateLimitedTries += 1) {
      await this.pace(post.team_id, post.channel_id);
      try {
        const result = await this.clients.writer.chat.postMessage(args);
        const ts = String(result.ts);
        await markPostDelivered(this.db, post.team_id, post.id, ts, await this.permalink(post.channel_id, ts));
        return;
      } catch (error) {
        const e = error as SlackErrorLike;
        if (e.code === 'slack_webapi_rate_limited_error' && rateLimitedTries < 10) {
          // A 429 means Slack did not take the message, so sending it again is safe.
          this.logger.warn({ postId: post.id, retryAfter: e.retryAfter }, 'slack rate limited a post; waiting');
          await sleep(Math.max(1, e.retryAfter ?? 1) * 1000);
          continue;
        }
        if (e.code === 'slack_webapi_platform_error') {
          const reason = e.data?.error ?? 'unknown_error';
          if (reason === 'invalid_blocks' && 'blocks' in args) {
            this.logger.error({ postId: post.id, reason }, 'slack refused the blocks; posting the text alone');
            delete (args as { blocks?: unknown }).blocks;
            continue;
          }
          this.logger.error({ postId: post.id, reason }, 'slack refused a post');
          await markPostFailed(this.db, post.team_id, post.id, reason);
          return;
        }
        throw error;
      }
    }
  }

  private async pace(teamId: string, channel: string): Promise<void> {
    // The slot is reserved in Postgres before waiting, so concurrent turns posting to one channel,
    // in this process or in another replica, queue up instead of bursting.
    const wait = await reservePostSlot(this.db, teamId, channel, SLACK_LIMITS.postIntervalMsPerChannel);
    if (wait > 0) await sleep(wait);
  }

  private async findPosted(post: Post): Promise<string | undefined> {
    let cursor: string | undefined;
    for (let page = 0; page < 20; page += 1) {
      const result = await this.clients.reader.conversations.replies({
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

  private async permalink(channel: string, ts: string): Promise<string | null> {
    try {
      const result = await this.clients.reader.chat.getPermalink({ channel, message_ts: ts });
      return result.permalink ?? null;
    } catch (error) {
      this.logger.warn({ err: error, channel }, 'could not fetch a permalink');
      return null;
    }
  }

  /** Ephemeral messages are not stored: they answer a click and are never retried. */
  async postEphemeral(channel: string, user: string, text: string, threadTs?: string): Promise<void> {
    await this.clients.writer.chat.postEphemeral({ channel, user, text, ...(threadTs ? { thread_ts: threadTs } : {}) });
  }
}
