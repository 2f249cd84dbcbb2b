// A scripted agent for end-to-end tests: it only chooses tool calls from what the bot tells it and
// repeats tool results in its text; every number it writes comes from a tool result.
import type Anthropic from '@anthropic-ai/sdk';
import { text, toolUse, type MessagesRequest, type Script, type ScriptReply } from './fakes/anthropic/index.js';

type Block = Anthropic.ContentBlockParam;

export const SEED_MESSAGE =
  '<@UBOT> Run benchmark 104 on the base model Qwen2.5-0.5B-Instruct. When that run finishes, train this model on the questions it got wrong. When the training finishes, run benchmark 104 again on the model that training produced. Then compare the two runs: score before and after, which questions got fixed, which got broken, and your verdict: did training really improve the model?';

function blocksOf(message: MessagesRequest['messages'][number] | undefined): Block[] {
  if (!message) return [];
  return typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : (message.content as Block[]);
}

function textOf(block: Block): string {
  if (block.type === 'text') return block.text;
  if (block.type === 'tool_result') {
    const c = block.content;
    return typeof c === 'string' ? c : (c ?? []).map((b) => (b.type === 'text' ? b.text : '')).join('\n');
  }
  return '';
}

/** The tool_use blocks of the assistant message before the last user message, by id. */
function toolNames(req: MessagesRequest): Map<string, { name: string; input: unknown }> {
  const names = new Map<string, { name: string; input: unknown }>();
  for (const message of req.messages) {
    if (message.role !== 'assistant') continue;
    for (const block of blocksOf(message)) if (block.type === 'tool_use') names.set(block.id, { name: block.name, input: block.input });
  }
  return names;
}

export interface LoopScriptOptions {
  /** On a platform event, launch this run instead of following the plan (to test the guard). */
  rogueLaunch?: { benchmarkId: string; modelId: string };
  /** Copies of each failed question in the training set, agreed in the plan (the bot's default when unset). */
  augmentation?: number;
  /** Epochs of the training it launches (the platform's default when unset). */
  epochs?: number;
}

/** Picks the next action from the newest user message, like a careful agent would. */
export function loopScript(options: LoopScriptOptions = {}): Script {
  return (req): ScriptReply => {
    const last = blocksOf(req.messages.at(-1));
    const results = last.filter((b): b is Anthropic.ToolResultBlockParam => b.type === 'tool_result');
    if (results.length > 0) return afterTools(req, results, options);
    const prompt = last.map(textOf).join('\n');
    return onPrompt(prompt, options);
  };
}

function onPrompt(prompt: string, options: LoopScriptOptions): ScriptReply {
  if (prompt.startsWith('[Slack message from')) {
    const model = /on (?:the base model )?([A-Za-z0-9._\-/]+?)(?:\.\s|\.$|\s|$)/.exec(prompt)?.[1];
    if (/benchmark\s+\d+/i.test(prompt) && model) return { content: [toolUse('model-lookup', { query: model })] };
    return { content: [text('Tell me which benchmark and model to run.')] };
  }
  if (prompt.startsWith('[Platform event')) {
    if (options.rogueLaunch) return { content: [toolUse('benchmark-launch', options.rogueLaunch)] };
    const train = /build the training set from run (\S+) \(dataset-build\) and launch the LoRA training of (\S+) on it/.exec(prompt);
    if (train) return { content: [text('The baseline run finished; building the training set.'), toolUse('dataset-build', { runId: train[1] })] };
    const rerun = /launch benchmark (\S+) on the trained model (\S+)\./.exec(prompt);
    if (rerun) return { content: [toolUse('benchmark-launch', { benchmarkId: rerun[1], modelId: rerun[2] })] };
    const compare = /compare run (\S+) \(before\) with run (\S+) \(after\)/.exec(prompt);
    if (compare) return { content: [toolUse('benchmark-analyze', { beforeRunId: compare[1], afterRunId: compare[2] })] };
    const finished = /^Run (\S+) \(benchmark (\S+), model (\S+)\): completed/m.exec(prompt);
    if (finished && prompt.includes('No plan was agreed')) {
      return { content: [toolUse('offer-next-steps', { steps: [{ action: 'train_on_failures', runId: finished[1], modelId: finished[3] }] })] };
    }
    return { content: [text(`Update: ${prompt.split('\n')[1] ?? ''}`)] };
  }
  const approve = /pressed "Approve [\d.]+ credits"\] They approve exactly this launch: (\{.*\})\./.exec(prompt);
  if (approve) {
    const intent = JSON.parse(approve[1]!) as { tool: string } & Record<string, unknown>;
    const { tool, ...input } = intent;
    if (tool === 'dataset-build') delete input.augmentation;
    return { content: [toolUse(tool, input)] };
  }
  const recorded = /Recorded in code: (.+?)\. Confirm/.exec(prompt);
  if (recorded) return { content: [text(`Done: ${recorded[1]}.`)] };
  const next = /pressed the next-step button\] They ask for exactly this step: (\{.*\})\./.exec(prompt);
  if (next) {
    const action = JSON.parse(next[1]!) as Record<string, unknown>;
    if (action.action === 'train_on_failures') {
      return { content: [toolUse('dataset-build', { runId: action.runId, heldOutFraction: action.heldOutFraction, augmentation: action.augmentation })] };
    }
    if (action.action === 'run_benchmark') return { content: [toolUse('benchmark-launch', { benchmarkId: action.benchmarkId, modelId: action.modelId })] };
    return { content: [text('Noted.')] };
  }
  return { content: [text('Okay.')] };
}

/** A platform error a retry can cure: 429, 503, a timeout or a dropped connection. */
const TRANSIENT_PLATFORM_ERROR = /temporarily unavailable|too many requests|rate.?limit|timed out|failed: (?:ECONN|UND_ERR|socket)/i;
const MAX_TRANSIENT_RETRIES = 3;

/** Tool results marked as errors since the message that started this turn. */
function errorsThisTurn(req: MessagesRequest): number {
  const turnStart = req.messages.findLastIndex((m) => m.role === 'user' && blocksOf(m).some((b) => b.type === 'text'));
  return req.messages
    .slice(turnStart + 1)
    .flatMap((m) => (m.role === 'user' ? blocksOf(m) : []))
    .filter((b) => b.type === 'tool_result' && b.is_error === true).length;
}

function afterTools(req: MessagesRequest, results: Anthropic.ToolResultBlockParam[], options: LoopScriptOptions): ScriptReply {
  const names = toolNames(req);
  const seed = req.messages
    .flatMap((m) => (m.role === 'user' ? blocksOf(m) : []))
    .map(textOf)
    .filter((t) => t.startsWith('[Slack message from'))
    .at(-1) ?? '';
  const wantsPlan = /train/i.test(seed) && /compare/i.test(seed);
  const contents = results.map((r) => ({ name: names.get(r.tool_use_id)?.name, text: textOf(r), error: r.is_error === true }));
  const failed = contents.find((c) => c.error);
  if (failed) {
    // Like a careful agent: a platform call that failed transiently (after the client's own
    // retries) is tried again, a few times per turn; any other error is reported as it is.
    const retry = results.filter((r) => r.is_error === true && TRANSIENT_PLATFORM_ERROR.test(textOf(r)));
    if (retry.length > 0 && errorsThisTurn(req) <= MAX_TRANSIENT_RETRIES) {
      return { content: retry.map((r) => names.get(r.tool_use_id)!).map((use) => toolUse(use.name, use.input)) };
    }
    return { content: [text(failed.text)] };
  }
  const first = contents[0]!;
  switch (first.name) {
    case 'model-lookup': {
      const id = /Exact match: (\S+)/.exec(first.text)?.[1];
      if (!id) return { content: [text(first.text)] };
      const benchmarkId = /benchmark\s+(\d+)/i.exec(seed)?.[1] ?? '104';
      const launch = toolUse('benchmark-launch', { benchmarkId, modelId: id });
      if (!wantsPlan) return { content: [launch] };
      return {
        content: [
          toolUse('plan-set', {
            benchmarkId,
            baseModelId: id,
            steps: ['baseline_run', 'train', 'trained_run', 'compare'],
            ...(options.augmentation !== undefined ? { augmentation: options.augmentation } : {}),
          }),
          launch,
        ],
      };
    }
    case 'dataset-build': {
      const dataset = /Dataset (\S+) built from run/.exec(first.text)?.[1];
      const all = JSON.stringify(req.messages);
      const base = /training of (\S+) on it/.exec(all)?.[1] ?? /\\"modelId\\":\\"([^\\"]+)\\"/.exec(all)?.[1];
      return {
        content: [
          text(first.text),
          toolUse('training-launch', { datasetId: dataset, baseModelId: base, ...(options.epochs !== undefined ? { epochs: options.epochs } : {}) }),
        ],
      };
    }
    case 'offer-next-steps': {
      const event = req.messages
        .flatMap((m) => (m.role === 'user' ? blocksOf(m) : []))
        .map(textOf)
        .filter((t) => t.startsWith('[Platform event'))
        .at(-1);
      return { content: [text(`${event?.split('\n')[1] ?? ''}\nWant me to train it on its failures? Press the button.`)] };
    }
    case 'benchmark-analyze':
      return { content: [text(`Here is the comparison. ${first.text.split('\n')[0]}`)] };
    default: {
      // A report: what woke the turn (the event's facts), what the tools did this turn.
      const turnStart = req.messages.findLastIndex((m) => m.role === 'user' && blocksOf(m).some((b) => b.type === 'text'));
      const wokeBy = blocksOf(req.messages[turnStart]).map(textOf).join('\n');
      const facts = wokeBy.startsWith('[Platform event') ? [wokeBy.split('\n')[1] ?? ''] : [];
      const done = req.messages
        .slice(turnStart + 1)
        .flatMap((m) => (m.role === 'user' ? blocksOf(m) : []))
        .filter((b) => b.type === 'tool_result')
        .map(textOf)
        .filter((t) => !t.startsWith('Plan recorded'));
      return { content: [text([...facts, ...done].join('\n'))] };
    }
  }
}
