// The owner of each turn's chat, on the turn: the Home tab's period totals of agent cost sum one
// table by an index, instead of joining every turn of the period to its chat on each refresh (the
// worker's costliest statement under load, and quadratic when the planner's statistics lag a burst).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('turns').addColumn('owner_user_id', 'text').execute();
  await sql`update turns t set owner_user_id = c.owner_user_id from chats c where c.id = t.chat_id`.execute(db);
  // Filled from the chat on every insert, whoever inserts (a chat's owner never changes).
  await sql`
    create function turns_set_owner() returns trigger language plpgsql as $$
    begin
      if new.owner_user_id is null then
        select owner_user_id into new.owner_user_id from chats where id = new.chat_id;
      end if;
      return new;
    end $$`.execute(db);
  await sql`create trigger turns_owner before insert on turns for each row execute function turns_set_owner()`.execute(db);
  await sql`alter table turns alter column owner_user_id set not null`.execute(db);
  await db.schema.createIndex('turns_team_owner_time').on('turns').columns(['team_id', 'owner_user_id', 'started_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists turns_owner on turns`.execute(db);
  await sql`drop function if exists turns_set_owner()`.execute(db);
  await db.schema.dropIndex('turns_team_owner_time').ifExists().execute();
  await db.schema.alterTable('turns').dropColumn('owner_user_id').execute();
}
