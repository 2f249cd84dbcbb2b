// Table interfaces for kysely, with Selectable/Insertable aliases beside them.
import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** numeric columns arrive from pg as strings; write them as strings or numbers. */
type Numeric = ColumnType<string, string | number | undefined, string | number>;
type NullableNumeric = ColumnType<string | null, string | number | null | undefined, string | number | null>;
type Json<T> = ColumnType<T, T extends unknown ? string | T : never, string | T>;
type BigId = ColumnType<string, string | number, string | number>;

export interface ChatsTable {
  id: Generated<string>;
  team_id: string;
  channel_id: string;
  thread_ts: string;
  owner_user_id: string;
  plan: Json<unknown> | null;
  /** What a person decided with a button that ends the loop (keep a model), with who and when. */
  decision: ColumnType<unknown, string | undefined | null, string | null>;
  /** When Slack's Stop button stopped this thread's loop, who pressed it, and the trigger that carries the stop out. */
  stopped_at: NullableTimestamp;
  stopped_by: string | null;
  stop_trigger_id: ColumnType<string | null, string | number | null | undefined, string | number | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type TriggerKind = 'mention' | 'reply' | 'button' | 'platform_event' | 'reconcile' | 'retry' | 'stop';
export type TriggerStatus = 'queued' | 'running' | 'done' | 'failed';

export interface TriggersTable {
  id: Generated<string>;
  team_id: string;
  chat_id: BigId;
  kind: TriggerKind;
  dedupe_key: string;
  user_id: string | null;
  payload: Json<Record<string, unknown>>;
  status: ColumnType<TriggerStatus, TriggerStatus | undefined, TriggerStatus>;
  error: string | null;
  created_at: Timestamp;
  finished_at: NullableTimestamp;
}

export interface TurnsTable {
  id: Generated<string>;
  team_id: string;
  chat_id: BigId;
  trigger_id: BigId;
  status: ColumnType<'running' | 'completed' | 'failed', 'running' | 'completed' | 'failed' | undefined>;
  model: string;
  model_calls: Generated<number>;
  input_tokens: Generated<number>;
  output_tokens: Generated<number>;
  cache_read_tokens: Generated<number>;
  cache_write_tokens: Generated<number>;
  cost_usd: Numeric;
  error: string | null;
  started_at: Timestamp;
  finished_at: NullableTimestamp;
  /** The chat's owner, filled on insert by the database (migration 2026-12-05-007): the Home tab's totals by person. */
  owner_user_id: ColumnType<string, string | undefined, never>;
}

export interface MessagesTable {
  id: Generated<string>;
  team_id: string;
  chat_id: BigId;
  turn_id: BigId | null;
  role: 'user' | 'assistant';
  content: Json<unknown[]>;
  stop_reason: string | null;
  usage: Json<Record<string, number>> | null;
  /** Reply parts a tool contributed to the turn's post (Block Kit in rows of earlier versions); never sent to the model. */
  attachments: Json<unknown[]> | null;
  created_at: Timestamp;
}

export interface PostsTable {
  id: Generated<string>;
  team_id: string;
  chat_id: BigId;
  turn_id: BigId | null;
  post_key: string;
  channel_id: string;
  thread_ts: string;
  payload: Json<Record<string, unknown>>;
  status: ColumnType<'pending' | 'posted' | 'failed', 'pending' | 'posted' | 'failed' | undefined>;
  attempts: Generated<number>;
  slack_ts: string | null;
  permalink: string | null;
  error: string | null;
  created_at: Timestamp;
  posted_at: NullableTimestamp;
  /** The fallback level Slack took the message at (src/slack/blocks/reply.ts RenderLevel); null: full (or not delivered yet). */
  render_level: ColumnType<string | null, string | null | undefined, string | null>;
}

export type ResourceKind = 'run' | 'dataset' | 'training' | 'comparison';

export interface ResourcesTable {
  id: Generated<string>;
  team_id: string;
  chat_id: BigId;
  turn_id: BigId | null;
  kind: ResourceKind;
  platform_id: string;
  plan_step: string | null;
  status: string;
  price_estimate: NullableNumeric;
  price_charged: NullableNumeric;
  web_url: string | null;
  /** Has a database default ('{}'), so optional on insert. */
  details: ColumnType<Record<string, unknown>, string | Record<string, unknown> | undefined, string | Record<string, unknown>>;
  created_at: Timestamp;
  updated_at: Timestamp;
  finished_at: NullableTimestamp;
  notified_at: NullableTimestamp;
}

export interface ActivityTable {
  id: Generated<string>;
  team_id: string;
  chat_id: BigId;
  turn_id: BigId;
  owner_user_id: string;
  channel_id: string;
  thread_ts: string;
  trigger_kind: TriggerKind;
  trigger_label: string;
  summary: string;
  post_id: BigId | null;
  resources: Json<unknown[]>;
  agent_cost_usd: Numeric;
  credits_estimated: Numeric;
  credits_charged: Numeric;
  created_at: Timestamp;
}

export interface WebhookReceiptsTable {
  webhook_id: string;
  type: string;
  resource_id: string;
  received_at: Timestamp;
}

export interface WorkerHeartbeatsTable {
  worker_id: string;
  process_id: string;
  last_seen: Timestamp;
}

export interface ChannelPostSlotsTable {
  team_id: string;
  channel_id: string;
  last_slot: Generated<Timestamp>;
}

export interface LaunchAuthorizationsTable {
  team_id: string;
  turn_id: BigId;
  tool_use_id: string;
  idempotency_key: string;
  plan_step: string | null;
  /** Credits the launch was allowed for; counted against the spending caps until it is recorded. */
  credits: Numeric;
  /** The person whose cap the launch counts against (the thread's owner). */
  spender_user_id: string | null;
  chat_id: BigId | null;
  created_at: Generated<Timestamp>;
  /** When its launch was recorded as a resource; null while it is in flight (or was lost). */
  recorded_at: NullableTimestamp;
}

export interface ButtonChoicesTable {
  id: Generated<string>;
  team_id: string;
  chat_id: BigId;
  post_id: BigId;
  /**
   * The choice's position in its post (its index among a typed reply's choices; the actions block's
   * index in a post stored as blocks by an earlier version). Its buttons are alternatives, and the
   * first allowed click takes them all.
   */
  block_index: number;
  claimed_by: string | null;
  claimed_at: NullableTimestamp;
  chosen_grant_id: BigId | null;
  created_at: Generated<Timestamp>;
}

export interface ButtonGrantsTable {
  id: Generated<string>;
  team_id: string;
  choice_id: BigId;
  post_id: BigId;
  action_id: string;
  label: string;
  /** The exact value posted with the button; a click carrying another value is refused. */
  value: string;
  grant: Json<unknown>;
}

export interface PlanMessagesTable {
  team_id: string;
  chat_id: BigId;
  channel_id: string;
  thread_ts: string;
  slack_ts: string | null;
  post_attempts: Generated<number>;
  /** The plan view last drawn in Slack (src/agent/plan-progress.ts), to skip a write that changes nothing. */
  state: Json<unknown> | null;
  /** Slack refused the blocks once: the message is kept as text. */
  text_only: Generated<boolean>;
  /** When Slack last took a write of it: the next waits the plan update interval (src/slack/limits.ts). */
  written_at: NullableTimestamp;
  /** The workspace update slot reserved for its next write (src/store/plan-messages.ts), until used. */
  slot_at: NullableTimestamp;
  created_at: Generated<Timestamp>;
}

/** One person's vote on one verdict message; a later click changes it. */
export interface VerdictFeedbackTable {
  id: Generated<string>;
  team_id: string;
  chat_id: BigId;
  /** The turn that wrote the verdict: the Activity line the vote shows on. */
  turn_id: BigId;
  post_id: BigId;
  user_id: string;
  vote: 'positive' | 'negative';
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface Database {
  chats: ChatsTable;
  triggers: TriggersTable;
  turns: TurnsTable;
  messages: MessagesTable;
  posts: PostsTable;
  resources: ResourcesTable;
  activity: ActivityTable;
  webhook_receipts: WebhookReceiptsTable;
  worker_heartbeats: WorkerHeartbeatsTable;
  channel_post_slots: ChannelPostSlotsTable;
  launch_authorizations: LaunchAuthorizationsTable;
  button_choices: ButtonChoicesTable;
  button_grants: ButtonGrantsTable;
  plan_messages: PlanMessagesTable;
  verdict_feedback: VerdictFeedbackTable;
  comparison_files: ComparisonFilesTable;
  slack_installations: SlackInstallationsTable;
  slack_enterprise_teams: SlackEnterpriseTeamsTable;
}

export type ComparisonFileState = 'pending' | 'uploading' | 'shared' | 'failed';

/** The chart of a comparison post and its upload state (src/store/comparison-files.ts). */
export interface ComparisonFilesTable {
  id: Generated<string>;
  team_id: string;
  chat_id: BigId;
  post_id: BigId;
  state: ColumnType<ComparisonFileState, ComparisonFileState | undefined, ComparisonFileState>;
  file_id: string | null;
  attempts: Generated<number>;
  error: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** A Slack installation (OAuth mode); its tokens live only in `sealed` (src/store/installations.ts). */
export interface SlackInstallationsTable {
  install_key: string;
  team_id: string | null;
  enterprise_id: string | null;
  is_enterprise_install: boolean;
  app_id: string | null;
  bot_user_id: string | null;
  bot_token_expires_at: NullableTimestamp;
  sealed: Buffer;
  installed_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** The organization of a workspace that an org-wide installation serves. */
export interface SlackEnterpriseTeamsTable {
  team_id: string;
  enterprise_id: string;
  seen_at: Generated<Date>;
}

export type Chat = Selectable<ChatsTable>;
export type Trigger = Selectable<TriggersTable>;
export type NewTrigger = Insertable<TriggersTable>;
export type Turn = Selectable<TurnsTable>;
export type StoredMessage = Selectable<MessagesTable>;
export type Post = Selectable<PostsTable>;
export type Resource = Selectable<ResourcesTable>;
export type Activity = Selectable<ActivityTable>;
export type PlanMessageRow = Selectable<PlanMessagesTable>;
