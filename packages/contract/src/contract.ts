// The platform API contract (docs/platform-api.md) as zod schemas: snake_case on the wire, camelCase in TypeScript.
// One file on purpose: it is the whole wire format, read beside the doc, and every schema in it changes with it.
import { z } from 'zod';

export const API_PREFIX = '/api/v1';

/** Error codes the API itself returns in `{ "error": { "code", "message" } }`. */
export const API_ERROR_CODES = [
  'not_found',
  'insufficient_credits',
  'invalid_request',
  'rate_limited',
  'unavailable',
  'unauthorized',
  /** The platform cannot do this on this machine (e.g. training without PyTorch); not retryable. */
  'engine_unavailable',
  /** 409: a cancel of a run or training that already completed or failed; nothing was changed. */
  'already_finished',
] as const;
export type ApiErrorCode = (typeof API_ERROR_CODES)[number];

export const ENVIRONMENTS = ['production', 'sandbox'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export const RUN_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const TRAINING_STATUSES = RUN_STATUSES;
export type TrainingStatus = RunStatus;

/** Statuses a run or training never leaves: `cancelled` (stopped on request) is as final as the other two. */
export const FINISHED_STATUSES = ['completed', 'failed', 'cancelled'] as const;
export type FinishedStatus = (typeof FINISHED_STATUSES)[number];

/** True once a run or training has finished (completed, failed or cancelled): it will not change again. */
export function isFinishedStatus(status: string): status is FinishedStatus {
  return (FINISHED_STATUSES as readonly string[]).includes(status);
}

export const WEBHOOK_EVENT_TYPES = [
  'run.completed',
  'run.failed',
  'run.cancelled',
  'training.completed',
  'training.failed',
  'training.cancelled',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export const AUGMENTATION = { min: 1, max: 20, default: 5 } as const;
export const HELD_OUT_FRACTION = { min: 0, max: 0.9, default: 0 } as const;
export const EPOCHS = { min: 1, max: 10, default: 3 } as const;
export const RESULTS_PAGE = { defaultLimit: 100, maxLimit: 500 } as const;

/** True when `value` is a finite number with at most two decimals (credits are cents-exact). */
export function hasAtMostTwoDecimals(value: number): boolean {
  return Number.isFinite(value) && Math.abs(value * 100 - Math.round(value * 100)) < 1e-6;
}

/** Rounds to cents; every credit amount on the wire passes through this. */
export function roundCredits(value: number): number {
  return Math.round((value + Number.EPSILON) * 100) / 100;
}

const id = z.string().min(1);
const timestamp = z.iso.datetime({ offset: true });
const fraction = z.number().min(0).max(1);
const count = z.number().int().min(0);
const environment = z.enum(ENVIRONMENTS);
export const creditsSchema = z.number().refine(hasAtMostTwoDecimals, { message: 'credits must have at most 2 decimals' });
const webUrl = z.url({ protocol: /^https?$/ });

// ---------------------------------------------------------------- errors

export const ErrorBodySchema = z.object({
  error: z.object({ code: z.string().min(1), message: z.string() }),
});
export type ErrorBodyWire = z.input<typeof ErrorBodySchema>;

// ---------------------------------------------------------------- account

export const AccountSchema = z
  .object({
    name: z.string(),
    balance_credits: creditsSchema,
    reserved_credits: creditsSchema,
    available_credits: creditsSchema,
    environment,
  })
  .transform((a) => ({
    name: a.name,
    balanceCredits: a.balance_credits,
    reservedCredits: a.reserved_credits,
    availableCredits: a.available_credits,
    environment: a.environment,
  }));
export type AccountWire = z.input<typeof AccountSchema>;
/** The account balance: `availableCredits = balanceCredits - reservedCredits` (price of in-flight work). */
export type Balance = z.output<typeof AccountSchema>;

// ---------------------------------------------------------------- models

const modelCommon = {
  id,
  name: z.string().min(1),
  params: z.number().int().positive(),
  size_label: z.string(),
  created_at: timestamp,
  environment,
};

export const ModelSchema = z
  .discriminatedUnion('kind', [
    z.object({
      ...modelCommon,
      kind: z.literal('base'),
      base_model_id: z.null(),
      training_job_id: z.null(),
      dataset_id: z.null(),
    }),
    z.object({
      ...modelCommon,
      kind: z.literal('fine_tuned'),
      base_model_id: id,
      training_job_id: id,
      dataset_id: id,
    }),
  ])
  .transform((m) => ({
    id: m.id,
    name: m.name,
    kind: m.kind,
    params: m.params,
    sizeLabel: m.size_label,
    baseModelId: m.base_model_id,
    trainingJobId: m.training_job_id,
    datasetId: m.dataset_id,
    createdAt: m.created_at,
    environment: m.environment,
  }));
export type ModelWire = z.input<typeof ModelSchema>;
export type Model = z.output<typeof ModelSchema>;
export type ModelKind = Model['kind'];

export const ModelListSchema = z.object({ items: z.array(ModelSchema) });
export type ModelListWire = z.input<typeof ModelListSchema>;

// ---------------------------------------------------------------- benchmarks

export const BenchmarkPricingSchema = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('flat'), credits: creditsSchema }),
    z.object({
      type: z.literal('per_model_size'),
      tiers: z
        .array(z.object({ max_params: z.number().int().positive().nullable(), credits: creditsSchema }))
        .min(1),
    }),
  ])
  .transform((p) =>
    p.type === 'flat'
      ? { type: p.type, credits: p.credits }
      : { type: p.type, tiers: p.tiers.map((t) => ({ maxParams: t.max_params, credits: t.credits })) },
  );
export type BenchmarkPricing = z.output<typeof BenchmarkPricingSchema>;

/**
 * Price in credits of one run of a benchmark on a model of `params` parameters: the flat price, or the
 * first tier (in listed order) whose `maxParams` is null or at least `params`, else the last tier.
 * The platform charges exactly this, and the bot quotes it; there is no other price rule.
 */
export function priceRun(pricing: BenchmarkPricing, params: number): number {
  if (pricing.type === 'flat') return pricing.credits;
  return priceTiers(pricing).find((t) => t.maxParams === null || params <= t.maxParams)!.credits;
}

/**
 * The size tiers as `priceRun` applies them, for describing a price: tiers no model can reach (one
 * listed after a larger or open tier) are left out, and the last one is open-ended (`maxParams`
 * null), so they ascend by size and a model of any size finds its tier.
 */
export function priceTiers(pricing: Extract<BenchmarkPricing, { type: 'per_model_size' }>): { maxParams: number | null; credits: number }[] {
  const reachable: { maxParams: number | null; credits: number }[] = [];
  let ceiling = -Infinity;
  for (const tier of pricing.tiers) {
    if (tier.maxParams === null) return [...reachable, tier];
    if (tier.maxParams > ceiling) {
      reachable.push(tier);
      ceiling = tier.maxParams;
    }
  }
  return [...reachable, { maxParams: null, credits: pricing.tiers[pricing.tiers.length - 1]!.credits }];
}

export const SCORINGS = ['exact_match', 'graded'] as const;
export type Scoring = (typeof SCORINGS)[number];

export const BenchmarkSchema = z
  .object({
    id,
    name: z.string(),
    description: z.string(),
    question_count: count,
    categories: z.array(z.object({ name: z.string(), question_count: count })),
    scoring: z.enum(SCORINGS),
    pricing: BenchmarkPricingSchema,
    environment,
    /** Extension (file benchmarks): the format the file was read as, and how its fields became ours. */
    source_format: z.object({ id: z.string(), name: z.string(), mapping: z.array(z.string()) }).optional(),
  })
  .transform((b) => ({
    id: b.id,
    name: b.name,
    description: b.description,
    questionCount: b.question_count,
    categories: b.categories.map((c) => ({ name: c.name, questionCount: c.question_count })),
    scoring: b.scoring,
    pricing: b.pricing,
    environment: b.environment,
    sourceFormat: b.source_format ?? null,
  }));
export type BenchmarkWire = z.input<typeof BenchmarkSchema>;
export type Benchmark = z.output<typeof BenchmarkSchema>;

export const BenchmarkListSchema = z.object({ items: z.array(BenchmarkSchema) });

/** `POST /benchmarks` as JSON: the JSONL file's text in `content`. */
export const BenchmarkUploadRequestSchema = z.object({
  id,
  file_name: z.string().min(1).max(255).optional(),
  content: z.string(),
});
export type BenchmarkUploadRequestWire = z.input<typeof BenchmarkUploadRequestSchema>;
export type BenchmarkListWire = z.input<typeof BenchmarkListSchema>;

/**
 * Cross-field rule of runs and trainings: `completedKeys` must be set once completed,
 * `cancelledKeys` (what was charged, and when) once cancelled, and a failed one must say why.
 */
function requiredByStatus<K extends string, C extends K>(completedKeys: readonly K[], cancelledKeys: readonly C[]) {
  return (value: { status: string; error_message: string | null } & Record<K, unknown>, ctx: z.RefinementCtx): void => {
    const required: readonly K[] = value.status === 'completed' ? completedKeys : value.status === 'cancelled' ? cancelledKeys : [];
    for (const key of required) {
      if (value[key] === null) ctx.addIssue({ code: 'custom', path: [key], message: `required when status is ${value.status}` });
    }
    if (value.status === 'failed' && value.error_message === null) {
      ctx.addIssue({ code: 'custom', path: ['error_message'], message: 'required when status is failed' });
    }
  };
}

// ---------------------------------------------------------------- runs

export const RunSchema = z
  .object({
    id,
    benchmark_id: id,
    model_id: id,
    status: z.enum(RUN_STATUSES),
    question_count: count,
    score: fraction.nullable(),
    category_scores: z
      .array(z.object({ category: z.string(), score: fraction, question_count: count }))
      .nullable(),
    price_credits: creditsSchema,
    charged_credits: creditsSchema.nullable(),
    created_at: timestamp,
    started_at: timestamp.nullable(),
    finished_at: timestamp.nullable(),
    estimated_finish_at: timestamp.nullable(),
    error_message: z.string().nullable(),
    web_url: webUrl,
    environment,
    /** Extension: what asked the questions, e.g. "llama.cpp, CPU, 2 threads", or "simulator". */
    engine: z.string().min(1).optional(),
    /** Extension: questions answered so far out of all. */
    progress: z.object({ done: count, total: count }).optional(),
    /** Extension (real engines): tokens the run used so far, once finished. */
    prompt_tokens: count.nullable().optional(),
    completion_tokens: count.nullable().optional(),
    /** Extension (real engines): answers cut by the token budget (`finish_reason: length`) so far. */
    truncated_count: count.optional(),
    /** Extension (real engines): questions that could not be answered or stored, recorded as error answers (scored wrong). */
    error_count: count.optional(),
  })
  .superRefine(requiredByStatus(['score', 'category_scores', 'charged_credits', 'finished_at'], ['charged_credits', 'finished_at']))
  .transform((r) => ({
    id: r.id,
    benchmarkId: r.benchmark_id,
    modelId: r.model_id,
    status: r.status,
    questionCount: r.question_count,
    score: r.score,
    categoryScores:
      r.category_scores?.map((c) => ({ category: c.category, score: c.score, questionCount: c.question_count })) ??
      null,
    priceCredits: r.price_credits,
    chargedCredits: r.charged_credits,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    estimatedFinishAt: r.estimated_finish_at,
    errorMessage: r.error_message,
    webUrl: r.web_url,
    environment: r.environment,
    engine: r.engine ?? null,
    progress: r.progress ?? null,
    promptTokens: r.prompt_tokens ?? null,
    completionTokens: r.completion_tokens ?? null,
    truncatedCount: r.truncated_count ?? null,
    errorCount: r.error_count ?? null,
  }));
export type RunWire = z.input<typeof RunSchema>;
export type Run = z.output<typeof RunSchema>;

export const LaunchRunRequestSchema = z
  .object({ benchmark_id: id, model_id: id })
  .transform((r) => ({ benchmarkId: r.benchmark_id, modelId: r.model_id }));
export type LaunchRunRequestWire = z.input<typeof LaunchRunRequestSchema>;
export type LaunchRunInput = z.output<typeof LaunchRunRequestSchema>;

export const QuestionResultSchema = z
  .object({
    question_id: id,
    category: z.string(),
    question: z.string(),
    expected_answer: z.string(),
    model_answer: z.string(),
    correct: z.boolean().nullable(),
    score: fraction,
    /** Extension (real engines): the answer was cut by the token budget. */
    truncated: z.boolean().optional(),
    /** Extension (real engines): why the question has an error answer (which component failed). */
    error: z.string().nullable().optional(),
  })
  .transform((q) => ({
    questionId: q.question_id,
    category: q.category,
    question: q.question,
    expectedAnswer: q.expected_answer,
    modelAnswer: q.model_answer,
    correct: q.correct,
    score: q.score,
    truncated: q.truncated ?? false,
    error: q.error ?? null,
  }));
export type QuestionResultWire = z.input<typeof QuestionResultSchema>;
/** One question of a run: `correct` is a boolean for exact_match (then `score` is 0 or 1) and null for graded. */
export type QuestionResult = z.output<typeof QuestionResultSchema>;

export const RunResultsPageSchema = z
  .object({ items: z.array(QuestionResultSchema), next_cursor: z.string().min(1).nullable() })
  .transform((p) => ({ items: p.items, nextCursor: p.next_cursor }));
export type RunResultsPageWire = z.input<typeof RunResultsPageSchema>;
export type RunResultsPage = z.output<typeof RunResultsPageSchema>;

/** A question counts as failed (and goes into a dataset) when its score is below this. */
export const FAILED_SCORE_THRESHOLD = 0.5;

// ---------------------------------------------------------------- datasets

export const BuildDatasetRequestSchema = z
  .object({
    run_id: id,
    augmentation: z.number().int().min(AUGMENTATION.min).max(AUGMENTATION.max).default(AUGMENTATION.default),
    held_out_fraction: z
      .number()
      .min(HELD_OUT_FRACTION.min)
      .max(HELD_OUT_FRACTION.max)
      .default(HELD_OUT_FRACTION.default),
    seed: z.number().int().min(0).max(2_147_483_647).default(0),
  })
  .transform((d) => ({
    runId: d.run_id,
    augmentation: d.augmentation,
    heldOutFraction: d.held_out_fraction,
    seed: d.seed,
  }));
export type BuildDatasetRequestWire = z.input<typeof BuildDatasetRequestSchema>;
export interface BuildDatasetInput {
  runId: string;
  augmentation?: number;
  heldOutFraction?: number;
  seed?: number;
}

export const DatasetSchema = z
  .object({
    id,
    status: z.literal('ready'),
    run_id: id,
    benchmark_id: id,
    source_model_id: id,
    augmentation: z.number().int().min(AUGMENTATION.min).max(AUGMENTATION.max),
    held_out_fraction: z.number().min(HELD_OUT_FRACTION.min).max(HELD_OUT_FRACTION.max),
    seed: z.number().int().min(0),
    failed_question_count: count,
    trained_question_ids: z.array(id),
    held_out_question_ids: z.array(id),
    example_count: count,
    token_count: count,
    created_at: timestamp,
    environment,
  })
  .transform((d) => ({
    id: d.id,
    status: d.status,
    runId: d.run_id,
    benchmarkId: d.benchmark_id,
    sourceModelId: d.source_model_id,
    augmentation: d.augmentation,
    heldOutFraction: d.held_out_fraction,
    seed: d.seed,
    failedQuestionCount: d.failed_question_count,
    trainedQuestionIds: d.trained_question_ids,
    heldOutQuestionIds: d.held_out_question_ids,
    exampleCount: d.example_count,
    tokenCount: d.token_count,
    createdAt: d.created_at,
    environment: d.environment,
  }));
export type DatasetWire = z.input<typeof DatasetSchema>;
export type Dataset = z.output<typeof DatasetSchema>;

// ---------------------------------------------------------------- trainings

export const TrainingRequestSchema = z
  .object({
    dataset_id: id,
    base_model_id: id,
    epochs: z.number().int().min(EPOCHS.min).max(EPOCHS.max).default(EPOCHS.default),
  })
  .transform((t) => ({ datasetId: t.dataset_id, baseModelId: t.base_model_id, epochs: t.epochs }));
export type TrainingRequestWire = z.input<typeof TrainingRequestSchema>;
export interface TrainingInput {
  datasetId: string;
  baseModelId: string;
  epochs?: number;
}

export const TrainingEstimateSchema = z
  .object({
    dataset_id: id,
    base_model_id: id,
    epochs: z.number().int().min(EPOCHS.min).max(EPOCHS.max),
    trained_tokens: count,
    credits_per_1k_tokens: creditsSchema,
    price_credits: creditsSchema,
    estimated_duration_seconds: z.number().min(0),
    environment,
  })
  .transform((e) => ({
    datasetId: e.dataset_id,
    baseModelId: e.base_model_id,
    epochs: e.epochs,
    trainedTokens: e.trained_tokens,
    creditsPer1kTokens: e.credits_per_1k_tokens,
    priceCredits: e.price_credits,
    estimatedDurationSeconds: e.estimated_duration_seconds,
    environment: e.environment,
  }));
export type TrainingEstimateWire = z.input<typeof TrainingEstimateSchema>;
export type TrainingEstimate = z.output<typeof TrainingEstimateSchema>;

export const TrainingJobSchema = z
  .object({
    id,
    dataset_id: id,
    base_model_id: id,
    epochs: z.number().int().min(EPOCHS.min).max(EPOCHS.max),
    status: z.enum(TRAINING_STATUSES),
    progress: fraction,
    trained_tokens: count,
    price_estimated_credits: creditsSchema,
    price_charged_credits: creditsSchema.nullable(),
    produced_model_id: id.nullable(),
    created_at: timestamp,
    started_at: timestamp.nullable(),
    finished_at: timestamp.nullable(),
    estimated_finish_at: timestamp.nullable(),
    error_message: z.string().nullable(),
    web_url: webUrl,
    environment,
    /** Extension: what trains, e.g. "PyTorch LoRA, CPU, 2 threads", or "simulator". */
    engine: z.string().min(1).optional(),
    /** Extension (real trainers): optimizer steps done and planned, and the last training loss. */
    steps: z.object({ done: count, total: count }).nullable().optional(),
    loss: z.number().nullable().optional(),
  })
  .superRefine(
    requiredByStatus(['produced_model_id', 'price_charged_credits', 'finished_at'], ['price_charged_credits', 'finished_at']),
  )
  .transform((t) => ({
    id: t.id,
    datasetId: t.dataset_id,
    baseModelId: t.base_model_id,
    epochs: t.epochs,
    status: t.status,
    progress: t.progress,
    trainedTokens: t.trained_tokens,
    priceEstimatedCredits: t.price_estimated_credits,
    priceChargedCredits: t.price_charged_credits,
    producedModelId: t.produced_model_id,
    createdAt: t.created_at,
    startedAt: t.started_at,
    finishedAt: t.finished_at,
    estimatedFinishAt: t.estimated_finish_at,
    errorMessage: t.error_message,
    webUrl: t.web_url,
    environment: t.environment,
    engine: t.engine ?? null,
    steps: t.steps ?? null,
    loss: t.loss ?? null,
  }));
export type TrainingJobWire = z.input<typeof TrainingJobSchema>;
export type TrainingJob = z.output<typeof TrainingJobSchema>;

// ---------------------------------------------------------------- webhooks

export const WebhookEndpointRequestSchema = z.object({ url: webUrl });
export type WebhookEndpointRequestWire = z.input<typeof WebhookEndpointRequestSchema>;

export const WebhookEndpointSchema = z
  .object({ url: webUrl.nullable(), updated_at: timestamp.nullable() })
  .transform((w) => ({ url: w.url, updatedAt: w.updated_at }));
export type WebhookEndpointWire = z.input<typeof WebhookEndpointSchema>;
export type WebhookEndpoint = z.output<typeof WebhookEndpointSchema>;

export const WebhookEventSchema = z
  .object({
    type: z.enum(WEBHOOK_EVENT_TYPES),
    id,
    created_at: timestamp,
    data: z.object({ id }),
  })
  .transform((e) => ({ type: e.type, id: e.id, createdAt: e.created_at, data: { id: e.data.id } }));
export type WebhookEventWire = z.input<typeof WebhookEventSchema>;
/** A verified webhook: `id` is the event id (equal to the `webhook-id` header, stable across redeliveries). */
export type WebhookEvent = z.output<typeof WebhookEventSchema>;

/** Formats a zod issue path as `items[3].correct`. */
export function formatIssuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? String(segment) : `.${String(segment)}`;
  }
  return out === '' ? '(root)' : out;
}

/** One-line description of a zod error naming the offending field paths. */
export function describeZodError(error: z.ZodError, maxIssues = 3): string {
  const parts = error.issues
    .slice(0, maxIssues)
    .map((issue) => `${formatIssuePath(issue.path)}: ${issue.message}`);
  const more = error.issues.length > maxIssues ? ` (+${error.issues.length - maxIssues} more)` : '';
  return parts.join('; ') + more;
}
