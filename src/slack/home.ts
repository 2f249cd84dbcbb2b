// Publishes a user's App Home view (the Activity log) and sends its CSV export to the user's DM.
import type { ViewsPublishArguments } from '@slack/web-api';
import type { Logger } from 'pino';
import { createScrubber, type SecretScrubber } from '../logger.js';
import { activityCsvRows, activityTotals, listActivity, type ActivityScope } from '../store/activity-queries.js';
import type { Db } from '../store/db.js';
import { spendingInPeriod } from '../store/spending.js';
import { ACTION_IDS } from './action-ids.js';
import { buildActivityCsv, buildHomeView, HOME_PAGE_SIZE, type HomeBalance } from './blocks/app-home.js';
import { asWorkspaceClients, isDeadTokenError, WorkspaceUnavailable, type SlackClients, type WorkspaceClients } from './workspace-clients.js';

export interface HomePublisher {
  publish(teamId: string, userId: string, options: { scope?: string; page?: number; csv?: boolean }): Promise<void>;
}

/** A balance in credits, or the platform's balance object (`Platform.getBalance()` fits). */
export type BalanceReading = number | null | { balanceCredits: number; availableCredits?: number };

export interface HomePublisherDeps {
  db: Db;
  /** One token's clients, or each workspace's (OAuth mode). */
  clients: SlackClients | WorkspaceClients;
  logger: Logger;
  /** Optional: without it (or when it fails or is slow) the header says the balance is unavailable. */
  getBalance?: () => Promise<BalanceReading>;
  /** Clock for "this week" (tests). */
  now?: () => Date;
  /** How long the view waits for the balance. */
  balanceTimeoutMs?: number;
  /** Scrubs the bot's secrets from every view and CSV export before it leaves. */
  scrubber?: SecretScrubber;
  /** The spending caps; with them the header shows where the viewer stands. */
  caps?: { personCap: number; workspaceCap: number; capPeriodDays: number };
}

const WEEK_MS = 7 * 24 * 60 * 60 * 1000;
const MAX_PAGE = 10_000;

interface SlackErrorLike {
  code?: string;
  data?: { error?: string };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function normalizeBalance(reading: BalanceReading): HomeBalance | null {
  if (reading === null || reading === undefined) return null;
  if (typeof reading === 'number') return Number.isFinite(reading) ? { credits: reading } : null;
  if (!Number.isFinite(reading.balanceCredits)) return null;
  return {
    credits: reading.balanceCredits,
    ...(reading.availableCredits !== undefined && Number.isFinite(reading.availableCredits) ? { available: reading.availableCredits } : {}),
  };
}

/**
 * `publish` renders one page of the viewer's Activity log (scope `mine` unless `team`) with
 * `views.publish`; with `csv` it instead uploads the whole scope as a CSV file to the viewer's DM.
 * A failed upload is reported in the DM and not thrown: an upload may have reached Slack, so a
 * blind retry could send the file twice.
 */
export function createHomePublisher(deps: HomePublisherDeps): HomePublisher {
  const now = deps.now ?? (() => new Date());
  const logger = deps.logger.child({ component: 'app-home' });
  const scrubber = deps.scrubber ?? createScrubber();

  const readBalance = async (): Promise<HomeBalance | null> => {
    if (!deps.getBalance) return null;
    try {
      return normalizeBalance(await withTimeout(deps.getBalance(), deps.balanceTimeoutMs ?? 5_000));
    } catch (error) {
      logger.warn({ err: error }, 'could not read the balance for the Home tab');
      return null;
    }
  };

  const workspaces = asWorkspaceClients(deps.clients);
  /** The workspace's clients; {@link WorkspaceUnavailable} when it has no installation or its token is refused (OAuth mode). */
  const clientsOf = async (teamId: string): Promise<SlackClients> => {
    const clients = await workspaces.forTeam(teamId);
    if (!clients) throw new WorkspaceUnavailable(teamId, 'not installed');
    return clients;
  };
  const gone = (teamId: string, error: unknown) =>
    workspaces.perWorkspace && isDeadTokenError(error) ? new WorkspaceUnavailable(teamId, (error as SlackErrorLike).data?.error ?? 'token refused') : error;

  const publishView = async (teamId: string, userId: string, scope: ActivityScope, page: number) => {
    const clients = await clientsOf(teamId);
    const query = { teamId, viewerId: userId, scope };
    const caps = deps.caps;
    const [list, totals, balance, spent] = await Promise.all([
      listActivity(deps.db, { ...query, limit: HOME_PAGE_SIZE, offset: page * HOME_PAGE_SIZE }),
      activityTotals(deps.db, { ...query, since: new Date(now().getTime() - WEEK_MS) }),
      readBalance(),
      caps ? spendingInPeriod(deps.db, teamId, userId, caps.capPeriodDays) : undefined,
    ]);
    const spending =
      caps && spent
        ? { person: spent.person, personCap: caps.personCap, workspace: spent.workspace, workspaceCap: caps.workspaceCap, periodDays: caps.capPeriodDays }
        : undefined;
    const view = scrubber.scrubValue(
      buildHomeView({ entries: list.entries, totals, scope, page, hasMore: list.hasMore, balance, ...(spending ? { spending } : {}) }),
    );
    try {
      await clients.writer.views.publish({ user_id: userId, view: view as unknown as ViewsPublishArguments['view'] });
    } catch (error) {
      const e = error as SlackErrorLike;
      const refused = e.code === 'slack_webapi_platform_error' && ['invalid_arguments', 'invalid_blocks'].includes(e.data?.error ?? '');
      if (!refused) throw gone(teamId, error);
      logger.error({ err: error, teamId, userId }, 'slack refused the Home view; publishing a minimal one');
      await clients.writer.views.publish({
        user_id: userId,
        view: {
          type: 'home',
          blocks: [
            { type: 'header', text: { type: 'plain_text', text: 'Activity log' } },
            { type: 'section', text: { type: 'mrkdwn', text: 'The Activity log could not be shown right now. Use *Download CSV* or try again later.' } },
            {
              type: 'actions',
              elements: [{ type: 'button', text: { type: 'plain_text', text: 'Download CSV' }, action_id: ACTION_IDS.homeCsv, value: scope }],
            },
          ],
        },
      });
    }
  };

  const exportCsv = async (teamId: string, userId: string, scope: ActivityScope) => {
    const clients = await clientsOf(teamId);
    const { rows, truncated } = await activityCsvRows(deps.db, { teamId, viewerId: userId, scope });
    const dm = await clients.reader.conversations.open({ users: userId }).catch((error: unknown) => {
      throw gone(teamId, error);
    });
    const channelId = dm.channel?.id;
    if (!channelId) throw new Error('conversations.open returned no channel');
    const filename = `activity-${scope === 'team' ? 'workspace' : 'mine'}-${now().toISOString().slice(0, 10)}.csv`;
    const what = scope === 'team' ? 'everyone in this workspace' : 'your loops';
    const count = `${rows.length} ${rows.length === 1 ? 'turn' : 'turns'}`;
    const comment = `Activity log export (${what}): ${count}${truncated ? `, the newest ${rows.length} only` : ''}.`;
    try {
      await clients.writer.files.uploadV2({
        channel_id: channelId,
        filename,
        title: filename,
        content: scrubber.scrub(buildActivityCsv(rows)),
        initial_comment: comment,
      });
    } catch (error) {
      logger.error({ err: error, teamId, userId }, 'CSV upload failed; not retried, the user is told');
      await clients.writer.chat
        .postMessage({ channel: channelId, text: "I couldn't upload your Activity log CSV. Press *Download CSV* in my Home tab to try again." })
        .catch((notifyError: unknown) => logger.warn({ err: notifyError }, 'could not tell the user the CSV upload failed'));
    }
  };

  return {
    publish: async (teamId, userId, options) => {
      const scope: ActivityScope = options.scope === 'team' ? 'team' : 'mine';
      if (options.csv) {
        await exportCsv(teamId, userId, scope);
        return;
      }
      const page = Number.isFinite(options.page) ? Math.min(MAX_PAGE, Math.max(0, Math.floor(options.page ?? 0))) : 0;
      await publishView(teamId, userId, scope, page);
    },
  };
}
