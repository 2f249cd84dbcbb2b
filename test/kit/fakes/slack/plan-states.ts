// The states of the plan messages the bot drew: each chat.postMessage or chat.update Slack took that
// carried a plan block (or targeted a message that did, or was marked with the plan's metadata type),
// in the order Slack took them, with each task card's status and detail as text.
import type { SlackCall } from './types.js';

export interface PlanTaskState {
  taskId: string;
  title: string;
  status: string;
  /** The details' rich text flattened to plain text (a date element as its fallback). */
  detail: string;
  sources: string[];
}

export interface PlanState {
  method: 'chat.postMessage' | 'chat.update';
  channel: string;
  /** The plan message's ts. */
  ts: string;
  threadTs?: string;
  at: number;
  text: string;
  /** Undefined when the message was written as text alone (no plan block). */
  title?: string;
  tasks: PlanTaskState[];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function flatten(rich: unknown): string {
  if (!isObj(rich) || !Array.isArray(rich.elements)) return '';
  return rich.elements
    .map((section) =>
      isObj(section) && Array.isArray(section.elements)
        ? section.elements
            .map((el) => (isObj(el) ? (el.type === 'date' ? String(el.fallback ?? el.timestamp) : String(el.text ?? el.url ?? '')) : ''))
            .join('')
        : '',
    )
    .join('\n');
}

function planBlockOf(blocks: unknown): Obj | undefined {
  return Array.isArray(blocks) ? (blocks.find((b) => isObj(b) && b.type === 'plan') as Obj | undefined) : undefined;
}

/** Every state of every plan message in `calls` (optionally one channel and thread), in the order Slack accepted them. */
export function planStates(calls: readonly SlackCall[], filter: { channel?: string; threadTs?: string; metadataType?: string } = {}): PlanState[] {
  const planMessages = new Map<string, string | undefined>(); // `${channel}:${ts}` -> thread ts
  const states: PlanState[] = [];
  for (const call of calls) {
    if (call.method !== 'chat.postMessage' && call.method !== 'chat.update') continue;
    const response = call.response;
    if (call.status !== 200 || !isObj(response) || response.ok !== true) continue;
    const channel = String(response.channel ?? call.args.channel);
    const ts = String(response.ts);
    const key = `${channel}:${ts}`;
    const plan = planBlockOf(call.args.blocks);
    const metadata = isObj(call.args.metadata) ? call.args.metadata : undefined;
    if (call.method === 'chat.postMessage') {
      const marked = filter.metadataType !== undefined && metadata?.event_type === filter.metadataType;
      if (!plan && !marked) continue;
      planMessages.set(key, typeof call.args.thread_ts === 'string' ? call.args.thread_ts : undefined);
    } else if (!planMessages.has(key)) continue;
    const threadTs = planMessages.get(key);
    if (filter.channel !== undefined && filter.channel !== channel) continue;
    if (filter.threadTs !== undefined && filter.threadTs !== threadTs) continue;
    const tasks = plan && Array.isArray(plan.tasks) ? plan.tasks.filter(isObj) : [];
    states.push({
      method: call.method,
      channel,
      ts,
      ...(threadTs ? { threadTs } : {}),
      at: call.at,
      text: String(call.args.text ?? ''),
      ...(plan ? { title: String(plan.title) } : {}),
      tasks: tasks.map((t) => ({
        taskId: String(t.task_id),
        title: String(t.title),
        status: String(t.status ?? 'pending'),
        detail: flatten(t.details),
        sources: Array.isArray(t.sources) ? t.sources.filter(isObj).map((s) => String(s.url)) : [],
      })),
    });
  }
  return states;
}
