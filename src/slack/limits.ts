// Every Slack limit the bot must respect, in one place; builders degrade instead of failing.
export const SLACK_LIMITS = {
  blocksPerMessage: 50,
  blocksPerView: 100,
  sectionText: 3000,
  /** Each of a section's `fields` text objects. */
  sectionFieldText: 2000,
  sectionFields: 10,
  /** A text object inside a context block (the composition object's own limit). */
  contextText: 3000,
  headerText: 150,
  contextElements: 10,
  buttonText: 75,
  buttonValue: 2000,
  actionId: 255,
  actionsElements: 25,
  messageText: 40_000,
  /**
   * The top-level `text` of a message with blocks: Slack shows it in notifications and where blocks
   * cannot be shown. Slack takes 40,000 characters; a notification needs far fewer.
   */
  fallbackText: 3000,
  tableRows: 100,
  tableColumns: 20,
  /** One table cell: Slack sets no figure below the message's; a cell beyond this is unreadable anyway. */
  tableCellText: 200,
  /** Table blocks in one message. */
  tablesPerMessage: 1,
  /**
   * Slack's data table block (docs: reference/block-kit/blocks/data-table-block): a header row plus
   * 1-100 rows, 1-20 columns, page_size 1-100, and at most 10,000 characters over all table cells of
   * one message (the summary table's cells are counted too, to stay on the safe side).
   */
  dataTableRows: 100,
  dataTableColumns: 20,
  dataTablePageSize: 100,
  dataTableMessageChars: 10_000,
  /** Files one message can share (Slack's upload limit per message). */
  filesPerMessage: 10,
  /** Slack's documented pace for chat.postMessage: about one message per second per channel. */
  postIntervalMsPerChannel: 1000,
  /**
   * The live plan message (src/slack/plan-message.ts) is rewritten at most this often. chat.update
   * is Web API tier 3 (50+ calls a minute per workspace); one message every 3 s is 20 a minute.
   */
  planUpdateIntervalMs: 3000,
  /**
   * chat.update calls of the plan messages of one workspace, all chats together: 40 a minute, under
   * tier 3's 50 with room for the updates after button choices.
   */
  updateIntervalMsPerWorkspace: 1500,
  /** agents.sessions.setStatus is a Tier 3 method (about 50 a minute): one call per 1.2 s per workspace. */
  sessionStatusIntervalMsPerWorkspace: 1200,
  /**
   * Plan and task card blocks: Slack documents no length for their titles (only the 255 characters
   * of a block_id); titles are kept to a header's length so a plan stays readable.
   */
  planTitle: 150,
  taskTitle: 150,
  /** Task cards in one plan block: Slack documents no figure; a plan of this bot has five. */
  planTasks: 20,
} as const;

/**
 * What the bot accepts from Slack. A request to `/slack/events` larger than `requestBodyBytes` is
 * refused unread (Slack's payloads are a few kB; a message holds at most 40,000 characters). The
 * model reads text and button values bounded by the same figures (src/agent/input-limits.ts).
 */
export const INBOUND_LIMITS = {
  requestBodyBytes: 1024 * 1024,
  messageText: SLACK_LIMITS.messageText,
  buttonValue: SLACK_LIMITS.buttonValue,
  buttonLabel: SLACK_LIMITS.buttonText,
} as const;

/**
 * The bot's own pacing of its Slack writes: Slack's documented pace (above) times `scale`
 * (SLACK_PACE_SCALE, 1 by default). Below 1 only against a Slack-compatible server that allows more.
 */
export interface SlackPace {
  /** chat.postMessage to one channel. */
  postIntervalMs: number;
  /** Rewrites of one live plan message. */
  planUpdateIntervalMs: number;
  /** chat.update calls of one workspace's plan messages. */
  workspaceUpdateIntervalMs: number;
  /** agents.sessions.setStatus calls of one workspace (Tier 3, src/slack/agent-session.ts). */
  sessionStatusIntervalMs: number;
}

export function slackPace(scale = 1): SlackPace {
  const scaled = (ms: number) => Math.max(1, Math.round(ms * scale));
  return {
    postIntervalMs: scaled(SLACK_LIMITS.postIntervalMsPerChannel),
    planUpdateIntervalMs: scaled(SLACK_LIMITS.planUpdateIntervalMs),
    workspaceUpdateIntervalMs: scaled(SLACK_LIMITS.updateIntervalMsPerWorkspace),
    sessionStatusIntervalMs: scaled(SLACK_LIMITS.sessionStatusIntervalMsPerWorkspace),
  };
}

/** Slack's own pace (SLACK_PACE_SCALE unset). */
export const SLACK_PACE: SlackPace = slackPace(1);

/** Shortens text to `max` characters, ending with an ellipsis when cut. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, Math.max(0, max - 1))}…`;
}

/** Splits long text into chunks no longer than `max`, preferring line breaks. */
export function splitText(text: string, max: number): string[] {
  const chunks: string[] = [];
  let rest = text;
  while (rest.length > max) {
    let cut = rest.lastIndexOf('\n', max);
    if (cut < max / 2) cut = rest.lastIndexOf(' ', max);
    if (cut < max / 2) cut = max;
    chunks.push(rest.slice(0, cut));
    rest = rest.slice(cut).replace(/^\n/, '');
  }
  if (rest.length > 0 || chunks.length === 0) chunks.push(rest);
  return chunks;
}
