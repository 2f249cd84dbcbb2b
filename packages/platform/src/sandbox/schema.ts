// The sandbox's own Postgres schema `sandbox`: ordered, idempotent migrations applied under an advisory lock.
import type pg from 'pg';
import { BENCHMARK_UPLOADS_DDL } from '../benchmarks/library.js';

const MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  {
    version: 1,
    sql: `
      CREATE TABLE sandbox.settings (
        key text PRIMARY KEY,
        value text NOT NULL
      );
      CREATE TABLE sandbox.account (
        id int PRIMARY KEY CHECK (id = 1),
        name text NOT NULL,
        balance numeric(14, 2) NOT NULL
      );
      CREATE TABLE sandbox.models (
        id text PRIMARY KEY,
        name text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('base', 'fine_tuned')),
        params bigint NOT NULL,
        size_label text NOT NULL,
        ability double precision,
        base_model_id text REFERENCES sandbox.models (id),
        training_job_id text,
        dataset_id text,
        created_at timestamptz NOT NULL
      );
      CREATE SEQUENCE sandbox.run_ids START 1001;
      CREATE TABLE sandbox.runs (
        seq bigserial UNIQUE,
        id text PRIMARY KEY,
        benchmark_id text NOT NULL,
        model_id text NOT NULL REFERENCES sandbox.models (id),
        status text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
        question_count int NOT NULL,
        price numeric(14, 2) NOT NULL,
        charged numeric(14, 2),
        score double precision,
        category_scores jsonb,
        seed bigint NOT NULL,
        flip_rate double precision NOT NULL,
        will_fail boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL,
        starts_at timestamptz NOT NULL,
        finishes_at timestamptz NOT NULL,
        duration_ms double precision NOT NULL,
        started_at timestamptz,
        finished_at timestamptz,
        error_message text
      );
      CREATE INDEX runs_due ON sandbox.runs (finishes_at) WHERE status IN ('queued', 'running');
      CREATE SEQUENCE sandbox.dataset_ids START 2001;
      CREATE TABLE sandbox.datasets (
        id text PRIMARY KEY,
        run_id text NOT NULL REFERENCES sandbox.runs (id),
        benchmark_id text NOT NULL,
        source_model_id text NOT NULL,
        augmentation int NOT NULL,
        held_out_fraction double precision NOT NULL,
        seed bigint NOT NULL,
        failed_question_count int NOT NULL,
        trained_question_ids text[] NOT NULL,
        held_out_question_ids text[] NOT NULL,
        example_count int NOT NULL,
        token_count bigint NOT NULL,
        created_at timestamptz NOT NULL
      );
      CREATE SEQUENCE sandbox.training_ids START 3001;
      CREATE TABLE sandbox.trainings (
        seq bigserial UNIQUE,
        id text PRIMARY KEY,
        dataset_id text NOT NULL REFERENCES sandbox.datasets (id),
        base_model_id text NOT NULL REFERENCES sandbox.models (id),
        epochs int NOT NULL,
        status text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
        trained_tokens bigint NOT NULL,
        price numeric(14, 2) NOT NULL,
        charged numeric(14, 2),
        produced_model_id text,
        memorization double precision NOT NULL,
        forgetting double precision NOT NULL,
        generalization double precision NOT NULL,
        will_fail boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL,
        starts_at timestamptz NOT NULL,
        finishes_at timestamptz NOT NULL,
        duration_ms double precision NOT NULL,
        started_at timestamptz,
        finished_at timestamptz,
        error_message text
      );
      CREATE INDEX trainings_due ON sandbox.trainings (finishes_at) WHERE status IN ('queued', 'running');
      CREATE TABLE sandbox.idempotency_keys (
        scope text NOT NULL,
        key text NOT NULL,
        request_hash text NOT NULL,
        response jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (scope, key)
      );
      CREATE TABLE sandbox.webhook_outbox (
        seq bigserial UNIQUE,
        id text PRIMARY KEY,
        type text NOT NULL,
        resource_id text NOT NULL,
        body text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'dropped')),
        attempts int NOT NULL DEFAULT 0,
        deliveries int NOT NULL DEFAULT 0,
        copies int NOT NULL DEFAULT 1,
        held boolean NOT NULL DEFAULT false,
        next_attempt_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL,
        delivered_at timestamptz,
        last_error text
      );
      CREATE INDEX webhook_outbox_due ON sandbox.webhook_outbox (next_attempt_at) WHERE status = 'pending';
    `,
  },
  {
    // Runs on a real inference engine: the engine's label on runs and models (null = simulated),
    // token totals, and one row per question holding its prompt, raw output, extracted answer and score.
    version: 2,
    sql: `
      ALTER TABLE sandbox.models ADD COLUMN engine text;
      ALTER TABLE sandbox.runs ADD COLUMN engine text;
      ALTER TABLE sandbox.runs ADD COLUMN credits_per_1k_tokens numeric(14, 4);
      ALTER TABLE sandbox.runs ADD COLUMN prompt_tokens bigint;
      ALTER TABLE sandbox.runs ADD COLUMN completion_tokens bigint;
      CREATE INDEX runs_engine_active ON sandbox.runs (seq) WHERE engine IS NOT NULL AND status IN ('queued', 'running');
      CREATE TABLE sandbox.run_answers (
        run_id text NOT NULL REFERENCES sandbox.runs (id),
        position int NOT NULL,
        question_id text NOT NULL,
        category text NOT NULL,
        question text NOT NULL,
        expected_answer text NOT NULL,
        item jsonb NOT NULL,
        prompt text NOT NULL,
        max_tokens int,
        style text,
        raw_output text,
        extracted_answer text,
        score double precision,
        prompt_tokens int,
        completion_tokens int,
        finish_reason text,
        answered_at timestamptz,
        PRIMARY KEY (run_id, position),
        UNIQUE (run_id, question_id)
      );
      CREATE INDEX run_answers_pending ON sandbox.run_answers (run_id, position) WHERE answered_at IS NULL;
    `,
  },
  {
    // Trainings on a real trainer: the trainer's label (null = simulated), the examples a dataset
    // trains on, stored progress, the adapter produced, and the adapter a fine-tuned model serves.
    version: 3,
    sql: `
      ALTER TABLE sandbox.datasets ADD COLUMN examples jsonb;
      ALTER TABLE sandbox.trainings ADD COLUMN trainer text;
      ALTER TABLE sandbox.trainings ADD COLUMN hyperparameters jsonb;
      ALTER TABLE sandbox.trainings ADD COLUMN attempts int NOT NULL DEFAULT 0;
      ALTER TABLE sandbox.trainings ADD COLUMN step int;
      ALTER TABLE sandbox.trainings ADD COLUMN total_steps int;
      ALTER TABLE sandbox.trainings ADD COLUMN loss double precision;
      ALTER TABLE sandbox.trainings ADD COLUMN progress_at timestamptz;
      ALTER TABLE sandbox.trainings ADD COLUMN estimated_finish_at timestamptz;
      ALTER TABLE sandbox.trainings ADD COLUMN adapter_path text;
      CREATE INDEX trainings_trainer_active ON sandbox.trainings (seq) WHERE trainer IS NOT NULL AND status IN ('queued', 'running');
      ALTER TABLE sandbox.models ADD COLUMN adapter_path text;
    `,
  },
  // Benchmarks uploaded through the API (benchmarks/library.ts).
  { version: 4, sql: BENCHMARK_UPLOADS_DDL },
  // A fine-tuned model served by a hosted engine under its own name (Together's output model); runs ask for it.
  { version: 5, sql: 'ALTER TABLE sandbox.models ADD COLUMN IF NOT EXISTS served_model text' },
  {
    // Runs and trainings cancelled on request (POST .../cancel): a final status beside completed and failed.
    version: 6,
    sql: `
      ALTER TABLE sandbox.runs DROP CONSTRAINT IF EXISTS runs_status_check;
      ALTER TABLE sandbox.runs ADD CONSTRAINT runs_status_check
        CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled'));
      ALTER TABLE sandbox.trainings DROP CONSTRAINT IF EXISTS trainings_status_check;
      ALTER TABLE sandbox.trainings ADD CONSTRAINT trainings_status_check
        CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled'));
    `,
  },
  {
    // When the engine's job of a cancelled training was known to be no longer running (stopped by the
    // process following it or by the next one to see it, found ended, or not found): stopped once.
    version: 7,
    sql: `
      ALTER TABLE sandbox.trainings ADD COLUMN IF NOT EXISTS engine_stopped_at timestamptz;
      CREATE INDEX IF NOT EXISTS trainings_engine_unstopped ON sandbox.trainings (seq)
        WHERE status = 'cancelled' AND trainer IS NOT NULL AND attempts > 0 AND engine_stopped_at IS NULL;
    `,
  },
  {
    // Benchmark files in other formats (the format each upload was read as), and runs that survive
    // any output: an answer's exact text when the stored one had to be escaped, and the error of a
    // question that could not be answered or stored (an error answer, counted wrong).
    version: 8,
    sql: `
      ALTER TABLE sandbox.benchmark_uploads ADD COLUMN IF NOT EXISTS format jsonb;
      ALTER TABLE sandbox.run_answers ADD COLUMN IF NOT EXISTS raw_output_exact text;
      ALTER TABLE sandbox.run_answers ADD COLUMN IF NOT EXISTS error text;
    `,
  },
];

/** Creates or upgrades the `sandbox` schema; safe to run concurrently and on every start. */
export async function migrateSandboxSchema(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('verdict-bot:sandbox-schema'))`);
    await client.query('CREATE SCHEMA IF NOT EXISTS sandbox');
    await client.query(
      'CREATE TABLE IF NOT EXISTS sandbox.migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const applied = await client.query<{ version: number }>('SELECT version FROM sandbox.migrations');
    const done = new Set(applied.rows.map((r) => r.version));
    for (const migration of MIGRATIONS) {
      if (done.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO sandbox.migrations (version) VALUES ($1)', [migration.version]);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
