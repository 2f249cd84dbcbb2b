// The Postgres InstallationStore on a real database: workspace and org-wide installs, sealed tokens,
// the worker's lookup by team id, and what a reinstall resumes.
import { randomBytes } from 'node:crypto';
import type { Installation } from '@slack/bolt';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateJobEngine } from '../../src/jobs/worker.js';
import { createDb, migrateToLatest, type DbHandle } from '../../src/store/db.js';
import { createInstallationStore, installationQueryForTeam, InstallationNotFound, resumeWorkspaces } from '../../src/store/installations.js';
import { createTokenCipher } from '../../src/store/token-cipher.js';
import { createTestDatabase } from '../kit/database.js';

let handle: DbHandle;
const key = randomBytes(32);
const id = (prefix: string) => `${prefix}${randomBytes(4).toString('hex').toUpperCase()}`;

function teamInstall(teamId: string, token: string, extra: Partial<Installation> = {}): Installation {
  return {
    team: { id: teamId, name: `Team ${teamId}` },
    enterprise: undefined,
    user: { id: 'UINSTALLER', token: undefined, scopes: undefined },
    bot: { token, scopes: ['chat:write'], id: 'B1', userId: 'UBOT' },
    appId: 'A1',
    isEnterpriseInstall: false,
    authVersion: 'v2',
    ...extra,
  } as Installation;
}

beforeAll(async () => {
  handle = createDb(await createTestDatabase('installations'), { max: 4 });
  await migrateToLatest(handle.db);
  await migrateJobEngine(handle.pool, pino({ level: 'silent' }));
});
afterAll(() => handle.close());

describe('the token cipher', () => {
  it('opens what it sealed, only with the same key and row, and never seals the same way twice', () => {
    const cipher = createTokenCipher(key);
    const a = cipher.seal('xoxb-secret', 'T:T1');
    const b = cipher.seal('xoxb-secret', 'T:T1');
    expect(a.equals(b)).toBe(false);
    expect(a.includes(Buffer.from('xoxb-secret'))).toBe(false);
    expect(cipher.open(a, 'T:T1')).toBe('xoxb-secret');
    expect(() => cipher.open(a, 'T:T2')).toThrow(/could not be decrypted/);
    expect(() => createTokenCipher(randomBytes(32)).open(a, 'T:T1')).toThrow(/SLACK_TOKEN_KEY/);
    const tampered = Buffer.from(a);
    tampered[tampered.length - 1]! ^= 1;
    expect(() => cipher.open(tampered, 'T:T1')).toThrow(/could not be decrypted/);
    expect(() => createTokenCipher(randomBytes(16))).toThrow(/32 bytes/);
  });
});

describe('createInstallationStore', () => {
  it('stores a workspace install sealed, fetches it back whole, replaces it on reinstall and deletes it', async () => {
    const store = createInstallationStore(handle.db, createTokenCipher(key));
    const teamId = id('T');
    const token = `xoxb-${randomBytes(12).toString('hex')}`;
    await store.storeInstallation(teamInstall(teamId, token, { bot: { token, refreshToken: 'xoxe-1-refresh', expiresAt: 2_000_000_000, scopes: ['chat:write'], id: 'B1', userId: 'UBOT' } }));

    const fetched = await store.fetchInstallation({ teamId, enterpriseId: undefined, isEnterpriseInstall: false });
    expect(fetched.bot?.token).toBe(token);
    expect(fetched.bot?.refreshToken).toBe('xoxe-1-refresh');
    expect(fetched.team?.name).toBe(`Team ${teamId}`);

    // Nothing secret in clear: not in the row as text, not in the bytes.
    const row = await sql<{ text: string; sealed: Buffer; expires: Date }>`select i::text as text, sealed, bot_token_expires_at as expires from slack_installations i where install_key = ${`T:${teamId}`}`.execute(handle.db);
    expect(row.rows).toHaveLength(1);
    expect(row.rows[0]!.text).not.toContain(token);
    expect(row.rows[0]!.text).not.toContain('xoxe-1-refresh');
    expect(row.rows[0]!.sealed.includes(Buffer.from(token))).toBe(false);
    expect(row.rows[0]!.expires.getTime()).toBe(2_000_000_000_000);

    const newer = `xoxb-${randomBytes(12).toString('hex')}`;
    await store.storeInstallation(teamInstall(teamId, newer));
    expect((await store.fetchInstallation({ teamId, enterpriseId: undefined, isEnterpriseInstall: false })).bot?.token).toBe(newer);

    await store.deleteInstallation({ teamId, enterpriseId: undefined, isEnterpriseInstall: false });
    await expect(store.fetchInstallation({ teamId, enterpriseId: undefined, isEnterpriseInstall: false })).rejects.toBeInstanceOf(InstallationNotFound);
    expect(await installationQueryForTeam(handle.db, teamId)).toBeUndefined();
  });

  it('keeps an org-wide install under its organization and finds it for each workspace seen in it', async () => {
    const store = createInstallationStore(handle.db, createTokenCipher(key));
    const enterpriseId = id('E');
    const [t1, t2] = [id('T'), id('T')];
    const token = `xoxb-${randomBytes(12).toString('hex')}`;
    await store.storeInstallation({
      team: undefined,
      enterprise: { id: enterpriseId, name: 'Org' },
      user: { id: 'UADMIN', token: undefined, scopes: undefined },
      bot: { token, scopes: ['chat:write'], id: 'B1', userId: 'UBOT' },
      isEnterpriseInstall: true,
      authVersion: 'v2',
    } as Installation<'v2', true>);
    // Before any event from t1 the worker cannot know t1 is in the org.
    expect(await installationQueryForTeam(handle.db, t1)).toBeUndefined();
    // Bolt's authorize of an event from t1 asks with the org and the workspace.
    const viaEvent = await store.fetchInstallation({ teamId: t1, enterpriseId, isEnterpriseInstall: true } as never);
    expect(viaEvent.bot?.token).toBe(token);
    expect(await installationQueryForTeam(handle.db, t1)).toEqual({ teamId: t1, enterpriseId, isEnterpriseInstall: true });
    expect(await installationQueryForTeam(handle.db, t2)).toBeUndefined();

    // A workspace of the org with an install of its own uses its own.
    const ownToken = `xoxb-${randomBytes(12).toString('hex')}`;
    await store.storeInstallation(teamInstall(t1, ownToken, { enterprise: { id: enterpriseId } }));
    expect(await installationQueryForTeam(handle.db, t1)).toEqual({ teamId: t1, enterpriseId, isEnterpriseInstall: false });

    await store.deleteInstallation({ teamId: undefined, enterpriseId, isEnterpriseInstall: true } as never);
    await expect(store.fetchInstallation({ teamId: t2, enterpriseId, isEnterpriseInstall: true } as never)).rejects.toBeInstanceOf(InstallationNotFound);
    expect((await store.fetchInstallation({ teamId: t1, enterpriseId, isEnterpriseInstall: false })).bot?.token).toBe(ownToken);
  });

  it('refuses to open rows sealed with another key', async () => {
    const teamId = id('T');
    await createInstallationStore(handle.db, createTokenCipher(key)).storeInstallation(teamInstall(teamId, 'xoxb-one'));
    const other = createInstallationStore(handle.db, createTokenCipher(randomBytes(32)));
    await expect(other.fetchInstallation({ teamId, enterpriseId: undefined, isEnterpriseInstall: false })).rejects.toThrow(/SLACK_TOKEN_KEY/);
  });
});

describe('resumeWorkspaces', () => {
  it('re-enqueues parked triggers, undelivered posts and recent plans of the reinstalled workspace only', async () => {
    const db = handle.db;
    const [teamId, otherTeam] = [id('T'), id('T')];
    const chat = async (team: string, plan: unknown) =>
      (await db.insertInto('chats').values({ team_id: team, channel_id: 'C1', thread_ts: `${Date.now()}.${randomBytes(3).readUIntBE(0, 3)}`, owner_user_id: 'U1', plan: plan === null ? null : JSON.stringify(plan) }).returning('id').executeTakeFirstOrThrow()).id;
    const trigger = async (team: string, chatId: string, status: 'queued' | 'running' | 'done') =>
      (await db.insertInto('triggers').values({ team_id: team, chat_id: chatId, kind: 'mention', dedupe_key: randomBytes(6).toString('hex'), payload: JSON.stringify({}), status }).returning('id').executeTakeFirstOrThrow()).id;
    const parkedChat = await chat(teamId, { steps: [] });
    const parked = await trigger(teamId, parkedChat, 'queued');
    const doneChat = await chat(teamId, null);
    const done = await trigger(teamId, doneChat, 'done');
    await db.insertInto('posts').values({ team_id: teamId, chat_id: doneChat, post_key: 'k1', channel_id: 'C1', thread_ts: '1.1', payload: JSON.stringify({ text: 'hi' }) }).execute();
    const quietChat = await chat(teamId, null);
    await trigger(teamId, quietChat, 'done');
    const othersChat = await chat(otherTeam, { steps: [] });
    await trigger(otherTeam, othersChat, 'queued');

    expect(await resumeWorkspaces(db, [teamId])).toEqual({ turns: 2, plans: 1 });
    // The job engine's public view: turn jobs are keyed by trigger, plan jobs queued per chat.
    const jobs = await sql<{ task_identifier: string; key: string | null; queue_name: string | null }>`select task_identifier, key, queue_name from graphile_worker.jobs`.execute(db);
    const turns = jobs.rows.filter((j) => j.task_identifier === 'run_turn').map((j) => j.key).sort();
    expect(turns).toEqual([`trigger:${parked}`, `trigger:${done}`].sort());
    expect(jobs.rows.filter((j) => j.task_identifier === 'plan_progress').map((j) => j.queue_name)).toEqual([`chat:${parkedChat}`]);
    // Again: the job keys collapse it.
    await resumeWorkspaces(db, [teamId]);
    const again = await sql<{ n: string }>`select count(*) as n from graphile_worker.jobs where task_identifier = 'run_turn'`.execute(db);
    expect(Number(again.rows[0]!.n)).toBe(2);
  });
});
