// Superseded by 2026-12-07-003: this migration created the plpgsql Slack ingest function, which
// enqueued turns by writing graphile-worker's private tables (only graphile-worker may write them;
// jobs go through its public add_job now, and the ingest is one set-based statement in
// src/store/triggers.ts). 2026-12-07-003 drops it where it exists; a new database creates nothing
// here. The migration keeps its name so that databases that ran it stay in step.
import type { Kysely } from 'kysely';

export async function up(_db: Kysely<any>): Promise<void> {
  // Nothing: see above.
}

export async function down(_db: Kysely<any>): Promise<void> {
  // Nothing: see above.
}
