// Superseded by 2026-12-07-003: this migration created functions that wrote graphile-worker's
// private tables, which only graphile-worker may write (jobs go through its public add_job now).
// 2026-12-07-003 drops them where they exist; a new database creates nothing here. The migration
// keeps its name so that databases that ran it stay in step.
import type { Kysely } from 'kysely';

export async function up(_db: Kysely<any>): Promise<void> {
  // Nothing: see above.
}

export async function down(_db: Kysely<any>): Promise<void> {
  // Nothing: see above.
}
