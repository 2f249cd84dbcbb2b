// Slack installations in Postgres (OAuth mode): Bolt's InstallationStore, tokens sealed with AES-256-GCM.
import type { Installation, InstallationQuery, InstallationStore } from '@slack/bolt';
import { sql } from 'kysely';
import { PLAN_PROGRESS_TASK } from '../jobs/task-names.js';
import type { Db } from './db.js';
import { addJob } from './jobs.js';
import type { TokenCipher } from './token-cipher.js';
import { addTurnJob, turnQueueName } from './triggers.js';

type AnyInstallation = Installation<'v1' | 'v2', boolean>;

/** The row an installation or a query names: the organization for an org-wide install, else the workspace. */
export function installKey(source: { isEnterpriseInstall?: boolean | undefined; enterpriseId?: string | undefined; teamId?: string | undefined }): string | undefined {
  if (source.isEnterpriseInstall && source.enterpriseId) return `E:${source.enterpriseId}`;
  if (source.teamId) return `T:${source.teamId}`;
  return undefined;
}

function keyOfInstallation(installation: AnyInstallation): string {
  const key = installKey({ isEnterpriseInstall: installation.isEnterpriseInstall, enterpriseId: installation.enterprise?.id, teamId: installation.team?.id });
  if (!key) throw new Error('an installation without a team or an enterprise id cannot be stored');
  return key;
}

/** Thrown by `fetchInstallation` when nothing is installed for the query (Bolt then refuses the request). */
export class InstallationNotFound extends Error {
  constructor(key: string | undefined) {
    super(`no Slack installation for ${key ?? 'a query without a team or an enterprise id'}`);
    this.name = 'InstallationNotFound';
  }
}

export interface PostgresInstallationStore extends InstallationStore {
  fetchInstallation(query: InstallationQuery<boolean>): Promise<AnyInstallation>;
  deleteInstallation(query: InstallationQuery<boolean>): Promise<void>;
}

/**
 * Bolt's InstallationStore over `slack_installations`. The whole Installation (bot and user tokens,
 * refresh tokens, the incoming webhook URL) is sealed in one column, bound to its row's key; only
 * ids and the token's expiry are in clear. Queries for a workspace of an org-wide install also
 * record which organization it belongs to, so the worker, which knows only the team id of a chat,
 * finds the organization's token ({@link installationQueryForTeam}).
 */
export function createInstallationStore(db: Db, cipher: TokenCipher): PostgresInstallationStore {
  const knownTeams = new Set<string>();
  const rememberOrgTeam = async (query: InstallationQuery<boolean>) => {
    if (!query.isEnterpriseInstall || !query.enterpriseId || !query.teamId) return;
    const mapping = `${query.teamId}:${query.enterpriseId}`;
    if (knownTeams.has(mapping)) return;
    await db
      .insertInto('slack_enterprise_teams')
      .values({ team_id: query.teamId, enterprise_id: query.enterpriseId })
      .onConflict((oc) => oc.column('team_id').doUpdateSet({ enterprise_id: query.enterpriseId!, seen_at: sql`now()` }))
      .execute();
    knownTeams.add(mapping);
  };
  return {
    storeInstallation: async (installation) => {
      const key = keyOfInstallation(installation);
      const row = {
        install_key: key,
        team_id: installation.team?.id ?? null,
        enterprise_id: installation.enterprise?.id ?? null,
        is_enterprise_install: installation.isEnterpriseInstall === true,
        app_id: installation.appId ?? null,
        bot_user_id: installation.bot?.userId ?? null,
        bot_token_expires_at: installation.bot?.expiresAt ? new Date(installation.bot.expiresAt * 1000) : null,
        sealed: cipher.seal(JSON.stringify(installation), key),
      };
      await db
        .insertInto('slack_installations')
        .values(row)
        .onConflict((oc) => oc.column('install_key').doUpdateSet({ ...row, updated_at: sql`now()` }))
        .execute();
    },
    fetchInstallation: async (query) => {
      const key = installKey(query);
      const found = key ? await db.selectFrom('slack_installations').select(['sealed']).where('install_key', '=', key).executeTakeFirst() : undefined;
      if (!found || !key) throw new InstallationNotFound(key);
      await rememberOrgTeam(query);
      return JSON.parse(cipher.open(found.sealed, key)) as AnyInstallation;
    },
    deleteInstallation: async (query) => {
      const key = installKey(query);
      if (key) await db.deleteFrom('slack_installations').where('install_key', '=', key).execute();
    },
  };
}

/**
 * How to ask for the token of a workspace the bot knows only by team id: its own installation, else
 * the org-wide installation of its organization. Undefined when neither exists (uninstalled).
 */
export async function installationQueryForTeam(db: Db, teamId: string): Promise<InstallationQuery<boolean> | undefined> {
  const row = await db
    .selectFrom('slack_installations as i')
    .select(['i.install_key', 'i.enterprise_id'])
    .where((eb) =>
      eb.or([
        eb('i.install_key', '=', `T:${teamId}`),
        eb(
          'i.install_key',
          '=',
          eb.selectFrom('slack_enterprise_teams as m').select(sql<string>`'E:' || m.enterprise_id`.as('k')).where('m.team_id', '=', teamId),
        ),
      ]),
    )
    .orderBy('i.install_key', 'desc')
    .executeTakeFirst();
  if (!row) return undefined;
  if (row.install_key.startsWith('T:')) return { teamId, enterpriseId: row.enterprise_id ?? undefined, isEnterpriseInstall: false };
  return { teamId, enterpriseId: row.enterprise_id!, isEnterpriseInstall: true } as InstallationQuery<boolean>;
}

/** The workspaces an installation serves that the bot has seen: the workspace, or the organization's known workspaces. */
export async function teamsOfInstallation(db: Db, installation: AnyInstallation): Promise<string[]> {
  if (!installation.isEnterpriseInstall) return installation.team?.id ? [installation.team.id] : [];
  const rows = await db.selectFrom('slack_enterprise_teams').select('team_id').where('enterprise_id', '=', installation.enterprise!.id).execute();
  return rows.map((r) => r.team_id);
}

/** Plans touched this recently are brought up to date on a reinstall; older ones are finished. */
const RESUME_PLAN_DAYS = 7;

/**
 * Picks the workspaces' work up where an uninstall left it: re-enqueues the turn of every trigger
 * not done (parked while no token existed), the delivery of posts still pending (through the latest
 * trigger of their chat: a finished trigger's turn only delivers), and a sync of recent live plans.
 * Every enqueue is idempotent (job keys), so a repeated reinstall adds nothing twice.
 */
export async function resumeWorkspaces(db: Db, teamIds: readonly string[]): Promise<{ turns: number; plans: number }> {
  if (teamIds.length === 0) return { turns: 0, plans: 0 };
  const open = await db
    .selectFrom('triggers')
    .select(['id', 'chat_id'])
    .where('team_id', 'in', teamIds)
    .where('status', 'in', ['queued', 'running'])
    .execute();
  const undelivered = await db
    .selectFrom('posts')
    .innerJoin('triggers', (j) => j.onRef('triggers.chat_id', '=', 'posts.chat_id').onRef('triggers.team_id', '=', 'posts.team_id'))
    .select(['posts.chat_id', sql<string>`max(triggers.id)`.as('trigger_id')])
    .where('posts.team_id', 'in', teamIds)
    .where('posts.status', '=', 'pending')
    .groupBy('posts.chat_id')
    .execute();
  const turns = new Map<string, string>();
  for (const t of open) turns.set(String(t.id), String(t.chat_id));
  for (const p of undelivered) turns.set(p.trigger_id, String(p.chat_id));
  for (const [triggerId, chatId] of turns) await addTurnJob(db, chatId, triggerId);
  const plans = await db
    .selectFrom('chats')
    .select(['id', 'team_id'])
    .where('team_id', 'in', teamIds)
    .where('plan', 'is not', null)
    .where('updated_at', '>', sql<Date>`now() - make_interval(days => ${RESUME_PLAN_DAYS})`)
    .execute();
  for (const chat of plans) {
    const payload = { teamId: chat.team_id, chatId: String(chat.id) };
    await addJob(db, { identifier: PLAN_PROGRESS_TASK, payload, queueName: turnQueueName(String(chat.id)), maxAttempts: 5 });
  }
  return { turns: turns.size, plans: plans.length };
}
