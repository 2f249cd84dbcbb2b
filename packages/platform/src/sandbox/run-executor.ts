// The durable run executor: asks every question of runs on a real inference engine, stores each answer, finishes the run from the stored answers.
import type pg from 'pg';
import type { WebhookEventType } from '@verdict/contract/contract';
import { chargeFor, longestAnswer } from '../engines/run-pricing.js';
import {
  answerTotals,
  errorAnswer,
  pendingQuestions,
  storeAnswer,
  type PendingQuestion,
  type RunItem,
  type StoredAnswer,
} from './answers.js';
import type { SandboxLogger } from './context.js';
import { withTransaction } from './store/db.js';
import { getRun, updateRun } from './store/runs.js';
import { chargeAccount } from './store/settings.js';
import { generationBudget, type InferenceEngine } from '../engines/inference.js';

export interface RunExecutorOptions {
  pool: pg.Pool;
  inference: InferenceEngine;
  /** Questions in flight at once, over every running run. */
  concurrency: number;
  scoreAnswer(item: RunItem, output: string): { extracted: string; score: number };
  /** Enqueues the run's platform event inside the transaction that finishes it. */
  emit(client: pg.PoolClient, type: Extract<WebhookEventType, `run.${string}`>, runId: string, at: Date): Promise<void>;
  logger: SandboxLogger;
  now?: () => Date;
  /** How often the database is looked at for new work when nothing wakes the executor. Default 500 ms. */
  pollIntervalMs?: number;
}

export interface RunExecutor {
  /** Looks for new work now (after a launch). */
  wake(): void;
  /**
   * A run was cancelled (its row says so): its questions in flight are aborted and their answers
   * discarded. Runs cancelled through another process are noticed on the next pass.
   */
  cancelled(runId: string): void;
  /** Stops asking; answers in flight are abandoned unstored (asked again on the next start). */
  stop(): Promise<void>;
}

/** How long a question whose answer could not be stored at all waits before it is asked again. */
const DEFER_MS = 5_000;

const LEADER_LOCK = "hashtext('verdict-bot:run-executor')";

/**
 * Starts the executor. Only one executor per database works at a time (a session advisory lock,
 * released when its connection closes, so a killed platform frees it at once). It starts queued
 * engine runs, asks their unanswered questions with at most `concurrency` in flight, stores each
 * answer once (raw output, extracted answer, score, tokens, budget), and when a run has no
 * unanswered question left, finishes it in one transaction: score and category scores from the
 * stored answers, the charge (token usage at the run's rate, at most its quoted price), and the
 * platform event. A question the engine fails to answer after its retries, or whose answer the
 * database refuses, is stored as an error answer (scored wrong, counted, its reason naming the
 * component that failed) and the run goes on; only a run whose every question is an error answer
 * fails, charging nothing. Any output is stored (NUL and lone surrogates escaped). After a crash, a new executor asks only the questions whose answer was never stored.
 * A cancelled run is never asked again: its requests in flight are aborted, and an answer that
 * arrives anyway is not stored (storing requires the run to be running, under a lock a cancel waits for).
 */
export function startRunExecutor(options: RunExecutorOptions): RunExecutor {
  const { pool, inference, logger } = options;
  const now = options.now ?? (() => new Date());
  const concurrency = Math.max(1, options.concurrency);
  const pollIntervalMs = options.pollIntervalMs ?? 500;
  const stopping = new AbortController();
  const inFlight = new Map<string, { runId: string; abort: AbortController; task: Promise<void> }>();
  let leader: pg.PoolClient | null = null;
  let wakeUp: (() => void) | null = null;
  let dirty = true;

  const keyOf = (q: { runId: string; position: number }) => `${q.runId}:${q.position}`;
  /** Questions whose answer the database could not store at all, and when they may be asked again. */
  const deferred = new Map<string, number>();

  function wake(): void {
    dirty = true;
    wakeUp?.();
  }

  function abortRun(runId: string): void {
    for (const question of inFlight.values()) {
      if (question.runId === runId) question.abort.abort();
    }
  }

  /** Aborts the questions in flight of runs that are no longer running (cancelled through any process). */
  async function abortFinishedRuns(): Promise<void> {
    const runIds = [...new Set([...inFlight.values()].map((q) => q.runId))];
    if (runIds.length === 0) return;
    const result = await pool.query<{ id: string; status: string }>(
      `SELECT id, status FROM sandbox.runs WHERE id = ANY($1::text[]) AND status <> 'running'`,
      [runIds],
    );
    for (const row of result.rows) {
      logger.info({ runId: row.id, status: row.status }, 'engine run no longer running; its questions in flight are aborted');
      abortRun(row.id);
    }
  }

  function nap(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeUp = null;
        resolve();
      }
      wakeUp = done;
      if (dirty || stopping.signal.aborted) done();
    });
  }

  async function becomeLeader(): Promise<boolean> {
    if (leader) return true;
    const client = await pool.connect();
    try {
      const result = await client.query<{ locked: boolean }>(`SELECT pg_try_advisory_lock(${LEADER_LOCK}) AS locked`);
      if (result.rows[0]!.locked) {
        leader = client;
        client.on('error', (error) => logger.warn({ err: error }, 'run executor lock connection lost'));
        return true;
      }
      client.release();
      return false;
    } catch (error) {
      client.release(true);
      throw error;
    }
  }

  async function startQueuedRuns(): Promise<void> {
    const started = await pool.query<{ id: string }>(
      `UPDATE sandbox.runs SET status = 'running', started_at = $1
        WHERE engine IS NOT NULL AND status = 'queued' RETURNING id`,
      [now()],
    );
    for (const row of started.rows) logger.info({ runId: row.id, engine: inference.label }, 'engine run started');
  }

  /** Running engine runs with no unanswered question (a crash between the last answer and the finish). */
  async function finishAnsweredRuns(): Promise<void> {
    const result = await pool.query<{ id: string }>(
      `SELECT r.id FROM sandbox.runs r
        WHERE r.engine IS NOT NULL AND r.status = 'running'
          AND NOT EXISTS (SELECT 1 FROM sandbox.run_answers a WHERE a.run_id = r.id AND a.answered_at IS NULL)`,
    );
    for (const row of result.rows) await finishRun(row.id);
  }

  async function finishRun(runId: string): Promise<void> {
    await withTransaction(pool, async (client) => {
      const run = await getRun(client, runId, 'skip-locked');
      if (!run || run.status !== 'running') return;
      const totals = await answerTotals(client, runId);
      if (totals.answered < totals.total) return;
      const finishedAt = now();
      if (totals.errors === totals.total) {
        // Nothing was measured: a score of 0 would blame the model for what failed around it.
        await updateRun(client, runId, {
          status: 'failed',
          charged: 0,
          finished_at: finishedAt,
          error_message: `no question could be answered (${totals.errors} error answers); the first: ${totals.firstError ?? 'unknown'}; nothing was charged`,
        });
        await options.emit(client, 'run.failed', runId, finishedAt);
        logger.warn({ runId, errors: totals.errors, engine: inference.label }, 'engine run failed: every question is an error answer');
        return;
      }
      const tokens = totals.promptTokens + totals.completionTokens;
      const charged = Math.min(run.price, chargeFor(tokens, run.credits_per_1k_tokens ?? 0));
      const score = Math.round((totals.scoreSum / Math.max(1, totals.total)) * 10_000) / 10_000;
      await updateRun(client, runId, {
        status: 'completed',
        score,
        category_scores: totals.categories,
        charged,
        finished_at: finishedAt,
        prompt_tokens: totals.promptTokens,
        completion_tokens: totals.completionTokens,
      });
      await chargeAccount(client, charged);
      await options.emit(client, 'run.completed', runId, finishedAt);
      logger.info({ runId, score, charged, tokens, truncated: totals.truncated, errors: totals.errors, engine: inference.label }, 'engine run completed');
    });
  }

  const describeError = (error: unknown) => (error instanceof Error ? error.message : String(error));

  /** Asks the engine and scores the output; an error answer naming the engine (or the scorer) when that fails. */
  async function answerOf(question: PendingQuestion, signal: AbortSignal): Promise<StoredAnswer> {
    let maxTokens: number | null = null;
    let result;
    try {
      const answerTokens = await inference.countTokens(question.modelId, longestAnswer(question.item), signal);
      maxTokens = generationBudget(answerTokens.count, question.item.max_tokens);
      result = await inference.complete({
        model: question.modelId,
        prompt: question.prompt,
        maxTokens,
        ...(question.item.stop ? { stop: question.item.stop } : {}),
        signal,
      });
    } catch (error) {
      if (signal.aborted) throw error;
      return errorAnswer(`the inference engine (${inference.label}) could not answer after its retries: ${describeError(error)}`, now(), maxTokens);
    }
    try {
      const scored = options.scoreAnswer(question.item, result.text);
      return {
        maxTokens,
        style: result.style,
        rawOutput: result.text,
        extractedAnswer: scored.extracted,
        score: scored.score,
        promptTokens: result.promptTokens,
        completionTokens: result.completionTokens,
        finishReason: result.finishReason,
        answeredAt: now(),
      };
    } catch (error) {
      return { ...errorAnswer(`the scorer failed on the answer: ${describeError(error)}`, now(), maxTokens), rawOutput: result.text, promptTokens: result.promptTokens, completionTokens: result.completionTokens, finishReason: result.finishReason, style: result.style };
    }
  }

  /**
   * Stores the answer; when the database refuses it, stores an error answer saying so (keeping its
   * tokens, which were spent). When even that cannot be stored the question stays unanswered and
   * is asked again on a later pass: the run is never failed for it.
   */
  async function record(question: PendingQuestion, answer: StoredAnswer): Promise<boolean> {
    try {
      return await storeAnswer(pool, question.runId, question.position, answer);
    } catch (error) {
      logger.warn({ err: error, runId: question.runId, questionId: question.item.id }, 'the database refused an answer; storing an error answer instead');
      const refused = {
        ...errorAnswer(`the database could not store the answer: ${describeError(error)}`, now(), answer.maxTokens),
        promptTokens: answer.promptTokens,
        completionTokens: answer.completionTokens,
        finishReason: answer.finishReason,
      };
      try {
        return await storeAnswer(pool, question.runId, question.position, refused);
      } catch (again) {
        logger.error({ err: again, runId: question.runId, questionId: question.item.id }, 'the database could not store an error answer either; the question will be asked again');
        deferred.set(keyOf(question), Date.now() + DEFER_MS);
        return false;
      }
    }
  }

  async function ask(question: PendingQuestion, cancelled: AbortSignal): Promise<void> {
    const signal = AbortSignal.any([stopping.signal, cancelled]);
    try {
      const answer = await answerOf(question, signal);
      if (signal.aborted) return;
      const stored = await record(question, answer);
      if (stored) {
        const left = await pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM sandbox.run_answers WHERE run_id = $1 AND answered_at IS NULL',
          [question.runId],
        );
        if (left.rows[0]!.n === 0) await finishRun(question.runId);
      }
    } catch (error) {
      if (signal.aborted) return;
      logger.error({ err: error, runId: question.runId, questionId: question.item.id }, 'the database failed while a question was recorded; it will be looked at again on a later pass');
    }
  }

  async function fill(): Promise<void> {
    const room = concurrency - inFlight.size;
    if (room <= 0) return;
    const at = Date.now();
    for (const [key, until] of deferred) if (until <= at) deferred.delete(key);
    const questions = await pendingQuestions(pool, room, new Set([...inFlight.keys(), ...deferred.keys()]));
    for (const question of questions) {
      const key = keyOf(question);
      const abort = new AbortController();
      const task = ask(question, abort.signal).finally(() => {
        inFlight.delete(key);
        wake();
      });
      inFlight.set(key, { runId: question.runId, abort, task });
    }
  }

  async function loop(): Promise<void> {
    while (!stopping.signal.aborted) {
      dirty = false;
      try {
        if (await becomeLeader()) {
          await abortFinishedRuns();
          await startQueuedRuns();
          await finishAnsweredRuns();
          await fill();
        }
      } catch (error) {
        if (stopping.signal.aborted) break;
        logger.error({ err: error }, 'run executor pass failed');
      }
      await nap(pollIntervalMs);
    }
  }

  const running = loop();

  return {
    wake,
    cancelled(runId) {
      abortRun(runId);
      wake();
    },
    async stop() {
      stopping.abort();
      wakeUp?.();
      await running;
      await Promise.allSettled([...inFlight.values()].map((q) => q.task));
      if (leader) {
        // Destroying the connection releases the session lock, even if the unlock could not run.
        leader.release(true);
        leader = null;
      }
    },
  };
}
