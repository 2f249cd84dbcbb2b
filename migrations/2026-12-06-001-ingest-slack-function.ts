// The web role's acknowledged write of Slack events as one function: for each event, in thread-key
// order (so two batches lock shared chats in the same order), the chat upserted (or looked up for a
// reply) and the trigger inserted unless its dedupe key was seen; then the new triggers' turn jobs,
// written by enqueue_turn_jobs_quietly (migration 2026-12-05-005: graphile-worker's rows, no
// NOTIFY). The same rows in the same transaction as the one set-based statement it replaces
// (src/store/triggers.ts), but each step is a one-row statement whose plan the function keeps: that
// statement spent about as long being planned as being run, on every ack (docs/performance.md, issue 18).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function ingest_slack_triggers(
      team_ids text[], channel_ids text[], thread_tss text[], owner_user_ids text[], can_create boolean[],
      kinds text[], dedupe_keys text[], user_ids text[], payloads jsonb[], max_attempts int)
    returns table (ord int, chat_id bigint, trigger_id bigint, existing_id bigint)
    language plpgsql as $$
    declare
      e record;
      new_triggers text[] := '{}';
      new_chats text[] := '{}';
    begin
      for e in
        select i.* from unnest(team_ids, channel_ids, thread_tss, owner_user_ids, can_create, kinds, dedupe_keys, user_ids, payloads)
          with ordinality as i(team_id, channel_id, thread_ts, owner_user_id, can_create, kind, dedupe_key, user_id, payload, n)
        order by i.team_id, i.channel_id, i.thread_ts, i.n
      loop
        ord := e.n;
        chat_id := null;
        trigger_id := null;
        existing_id := null;
        if e.can_create then
          -- "do update" (a no-op write) returns the id of an existing chat too.
          insert into chats as c (team_id, channel_id, thread_ts, owner_user_id)
            values (e.team_id, e.channel_id, e.thread_ts, e.owner_user_id)
            on conflict on constraint chats_thread_key do update set updated_at = c.updated_at
            returning c.id into chat_id;
        else
          select c.id into chat_id from chats c where c.team_id = e.team_id and c.channel_id = e.channel_id and c.thread_ts = e.thread_ts;
        end if;
        if chat_id is not null then
          insert into triggers as t (team_id, chat_id, kind, dedupe_key, user_id, payload)
            values (e.team_id, chat_id, e.kind, e.dedupe_key, e.user_id, e.payload)
            on conflict on constraint triggers_dedupe do nothing
            returning t.id into trigger_id;
          if trigger_id is null then
            -- A statement of its own, so it sees a concurrent delivery that committed while the insert waited.
            select t.id into existing_id from triggers t where t.team_id = e.team_id and t.dedupe_key = e.dedupe_key;
          else
            new_triggers := new_triggers || trigger_id::text;
            new_chats := new_chats || chat_id::text;
          end if;
        end if;
        return next;
      end loop;
      perform enqueue_turn_jobs_quietly(new_triggers, new_chats, max_attempts);
    end $$
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists ingest_slack_triggers(text[], text[], text[], text[], boolean[], text[], text[], text[], jsonb[], int)`.execute(db);
}
