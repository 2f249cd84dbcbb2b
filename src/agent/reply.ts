// The agent's reply contract: what a turn says, as text plus typed parts. It knows nothing of Slack;
// the outbox stores it and src/slack/ renders it at delivery (src/slack/blocks/reply.ts).
import type { Comparison, QuestionChanges } from '../analysis/index.js';

/** What a tool wants to do with the person's credits. */
export type LaunchIntent =
  | { tool: 'benchmark-launch'; benchmarkId: string; modelId: string }
  | { tool: 'dataset-build'; runId: string; augmentation: number; heldOutFraction: number }
  | { tool: 'training-launch'; datasetId: string; baseModelId: string };

/** A next step a person can take with one click. Which ones a verdict offers is decided in ./next-steps.ts. */
export type NextAction =
  | { action: 'train_on_failures'; runId: string; modelId: string; heldOutFraction: number; augmentation: number }
  | { action: 'run_benchmark'; benchmarkId: string; modelId: string }
  | { action: 'compare'; beforeRunId: string; afterRunId: string }
  | { action: 'keep_model'; modelId: string };

/**
 * What a choice authorizes. Stored with the post that offers it; a click is judged against the
 * stored grant of the message it came from, never against what the click carries.
 */
export type ButtonGrant =
  | { kind: 'approve'; intent: LaunchIntent; credits: number }
  | { kind: 'next'; action: NextAction }
  | { kind: 'retry'; trigger: string }
  | { kind: 'pick'; text: string };

/** One option of a choice: what the person reads and what it authorizes. */
export interface ChoiceOption {
  label: string;
  grant: ButtonGrant;
  /** The option the bot recommends (shown emphasized). */
  primary?: boolean;
}

/** One step's cost in the comparison's cost line. */
export interface CostLine {
  label: string;
  /** Credits charged, or estimated while not charged yet. */
  credits: number;
  charged: boolean;
  /** The estimate given at launch. */
  estimated: number | null;
}

/** What the thread has cost so far: every launch and the agent's turns. */
export interface CostFigures {
  costs: CostLine[];
  agentUsd: number;
  /** The agent's cost of each turn so far, oldest first. */
  agentTurnsUsd?: number[];
  elapsedMs: number | null;
}

/** A run of a comparison; the counts are set for runs on a real engine (absent in parts stored before they existed). */
export interface ComparedRun {
  runId: string;
  modelId: string;
  /** Answers cut by the token budget (`finish_reason: length`). */
  truncated?: number;
  /** Error answers: questions that could not be answered or stored. */
  errors?: number;
}

/** Before vs after, computed in code (src/analysis): the table, the verdict, the notes and the cost. */
export interface ComparisonPart {
  kind: 'comparison';
  comparison: Comparison;
  before: ComparedRun;
  after: ComparedRun;
  cost: CostFigures;
  /** The questions fixed, broken and still wrong (bounded lists); absent in parts stored before it existed. */
  questions?: QuestionChanges;
}

/**
 * Alternatives offered together: the first allowed click takes the choice, and the message then
 * says who chose what. Next steps and picks among candidates are choices.
 */
export interface ChoicesPart {
  kind: 'choices';
  options: ChoiceOption[];
}

/** A launch the spend guard stopped: the person may approve exactly this intent for these credits. */
export interface ApprovalPart {
  kind: 'approval';
  intent: LaunchIntent;
  credits: number;
}

/** The turn could not finish (the model was unreachable): pressing Retry runs it again. */
export interface RetryPart {
  kind: 'retry';
  /** The trigger whose turn failed. */
  triggerId: string;
}

/** Status of one step of a piece of work in progress. */
export type ProgressStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped';

/**
 * Work in progress, step by step (a plan, a run). Rendered as plain lines today; Slack's plan and
 * task surfaces can be built on it without changing what the agent says.
 */
export interface ProgressPart {
  kind: 'progress';
  title: string;
  steps: Array<{ label: string; status: ProgressStatus; detail?: string }>;
}

/**
 * Block Kit stored by a version before typed replies (the attachments of a turn that was in flight
 * during the upgrade). Rendered as it was; never produced by new code.
 */
export interface LegacyBlocksPart {
  kind: 'legacy_blocks';
  blocks: unknown[];
}

/** Every kind of part; a new surface is a new member here and one case in the renderer. */
export type ReplyPart = ComparisonPart | ChoicesPart | ApprovalPart | RetryPart | ProgressPart | LegacyBlocksPart;

export const REPLY_PART_KINDS: ReadonlySet<ReplyPart['kind']> = new Set(['comparison', 'choices', 'approval', 'retry', 'progress', 'legacy_blocks']);

/** Where the work a message reports was done: every message about simulated work says so. */
export type ReplyOrigin = { kind: 'sandbox' } | { kind: 'engine'; name: string };

/** One message of the agent to the thread. */
export interface Reply {
  /** The person the message is for (a Slack user id): it starts by mentioning them. */
  to: string;
  /** What the agent says, in the common Markdown the model writes. */
  text: string;
  parts: ReplyPart[];
  origin?: ReplyOrigin | null;
}

/**
 * The parts stored with a tool result (`messages.attachments`). Rows written before typed replies
 * hold Block Kit blocks instead: each run of them becomes one `legacy_blocks` part, in order.
 */
export function partsFromStored(stored: unknown): ReplyPart[] {
  if (!Array.isArray(stored)) return [];
  const parts: ReplyPart[] = [];
  for (const item of stored as unknown[]) {
    const kind = (item as { kind?: unknown } | null)?.kind;
    if (typeof kind === 'string' && REPLY_PART_KINDS.has(kind as ReplyPart['kind'])) {
      parts.push(item as ReplyPart);
      continue;
    }
    const last = parts.at(-1);
    if (last?.kind === 'legacy_blocks') last.blocks.push(item);
    else parts.push({ kind: 'legacy_blocks', blocks: [item] });
  }
  return parts;
}
