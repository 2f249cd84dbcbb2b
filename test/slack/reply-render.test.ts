// The reply renderer alone (pure, no database): every part kind, every Slack limit, and how it degrades.
import type { KnownBlock } from '@slack/types';
import { describe, expect, it } from 'vitest';
import { compareRuns, type QuestionOutcome } from '../../src/analysis/index.js';
import { partsFromStored, type ComparisonPart, type Reply, type ReplyPart } from '../../src/agent/reply.js';
import { ACTION_IDS } from '../../src/slack/action-ids.js';
import { capBlocks, renderReply } from '../../src/slack/blocks/reply.js';
import { offeredChoices } from '../../src/slack/offered-choices.js';
import { SLACK_LIMITS } from '../../src/slack/limits.js';
import { validateBlocks } from '../kit/fakes/slack/index.js';

const OWNER = 'UOWNER';

function outcomes(n: number, correct: (i: number) => boolean): QuestionOutcome[] {
  return Array.from({ length: n }, (_, i) => ({ questionId: `q${i}`, category: `c${i % 3}`, correct: correct(i) }));
}

function comparisonPart(): ComparisonPart {
  return {
    kind: 'comparison',
    comparison: compareRuns({ before: outcomes(100, (i) => i % 10 < 6), after: outcomes(100, (i) => i % 10 < 8) }),
    before: { runId: 'r1', modelId: 'base' },
    after: { runId: 'r2', modelId: 'ft' },
    cost: { costs: [{ label: 'baseline run r1', credits: 4, charged: true, estimated: 4 }], agentUsd: 0.01, elapsedMs: 1000 },
  };
}

const types = (blocks: readonly KnownBlock[]) => blocks.map((b) => b.type);
const textOf = (block: KnownBlock | undefined) => JSON.stringify(block ?? null);

describe('the reply renderer', () => {
  it('renders the text with the mention first, the parts in order, and the sandbox note last', () => {
    const reply: Reply = {
      to: OWNER,
      text: '**Launched** run r1.',
      parts: [comparisonPart(), { kind: 'choices', options: [{ label: 'Keep the base model', grant: { kind: 'next', action: { action: 'keep_model', modelId: 'base' } }, primary: true }] }],
      origin: { kind: 'sandbox' },
    };
    const { text, blocks } = renderReply(reply);
    expect(text).toBe(`<@${OWNER}> *Launched* run r1.`);
    expect(types(blocks).slice(0, 4)).toEqual(['section', 'header', 'section', 'table']);
    // The verdict's feedback buttons sit after the comparison (its cost line) and before the next steps.
    expect(types(blocks).slice(-4)).toEqual(['section', 'context_actions', 'actions', 'context']);
    expect(textOf(blocks.at(-4))).toContain('*Total:* 4.00 credits');
    expect(blocks.at(-3)).toMatchObject({ type: 'context_actions', elements: [{ type: 'feedback_buttons', action_id: ACTION_IDS.verdictFeedback }] });
    expect(textOf(blocks.at(-1))).toContain('Sandbox platform: simulated');
    expect(blocks.at(-2)).toMatchObject({ type: 'actions', elements: [{ action_id: ACTION_IDS.nextStep, style: 'primary', text: { text: 'Keep the base model' } }] });
    expect(validateBlocks(blocks, 'message')).toEqual([]);
  });

  it('names a real engine instead of the sandbox, and says "Done." for an empty answer', () => {
    const { text, blocks } = renderReply({ to: OWNER, text: '  ', parts: [], origin: { kind: 'engine', name: 'llama.cpp <CPU>' } });
    expect(text).toBe(`<@${OWNER}> Done.`);
    expect(textOf(blocks.at(-1))).toContain(':gear: Engine: llama.cpp &lt;CPU&gt;');
  });

  it('renders an approval and a retry as one-button choices', () => {
    const { blocks } = renderReply({
      to: OWNER,
      text: 'Stopped.',
      parts: [
        { kind: 'approval', intent: { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'm' }, credits: 12.5 },
        { kind: 'retry', triggerId: '42' },
      ],
    });
    expect(blocks[1]).toMatchObject({ type: 'actions', elements: [{ action_id: ACTION_IDS.approve, style: 'primary', text: { text: 'Approve 12.5 credits' } }] });
    expect(blocks[2]).toMatchObject({ type: 'actions', elements: [{ action_id: ACTION_IDS.retry, text: { text: 'Retry' }, value: '{"kind":"retry","trigger":"42"}' }] });
  });

  it('renders progress as plain lines, escaped', () => {
    const { blocks } = renderReply({
      to: OWNER,
      text: 'Where the plan stands.',
      parts: [
        {
          kind: 'progress',
          title: 'Plan <!here>',
          steps: [
            { label: 'Baseline run', status: 'completed', detail: 'r1' },
            { label: 'Training', status: 'running' },
            { label: 'Compare', status: 'pending' },
          ],
        },
      ],
    });
    const line = (blocks[1] as { text: { text: string } }).text.text;
    expect(line).toBe('*Plan &lt;!here&gt;*\n:white_check_mark: Baseline run · r1\n:hourglass_flowing_sand: Training\n:white_circle: Compare');
  });
});

describe('degrading instead of failing', () => {
  it('splits a long answer into sections within the limit and keeps the notification text short', () => {
    const long = Array.from({ length: 400 }, (_, i) => `Line ${i} of a long answer that goes on.`).join('\n');
    const { text, blocks } = renderReply({ to: OWNER, text: long, parts: [] });
    const sections = blocks.filter((b) => b.type === 'section') as Array<{ text: { text: string } }>;
    expect(sections.length).toBeGreaterThan(3);
    for (const s of sections) expect(s.text.text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText);
    expect(text.length).toBeLessThanOrEqual(SLACK_LIMITS.fallbackText);
    expect(text.endsWith('…')).toBe(true);
  });

  it('keeps every choice clickable when a message has more blocks than Slack takes, and says how many were cut', () => {
    const parts: ReplyPart[] = [
      { kind: 'legacy_blocks', blocks: Array.from({ length: 60 }, (_, i) => ({ type: 'context', elements: [{ type: 'mrkdwn', text: `note ${i}` }] })) },
      { kind: 'choices', options: [{ label: 'Use a', grant: { kind: 'pick', text: 'a' } }] },
    ];
    const { blocks } = renderReply({ to: OWNER, text: 'Many notes.', parts, origin: { kind: 'sandbox' } });
    expect(blocks).toHaveLength(SLACK_LIMITS.blocksPerMessage);
    expect(blocks.filter((b) => b.type === 'actions')).toHaveLength(1);
    const more = blocks.find((b) => textOf(b).includes('more not shown'));
    expect(textOf(more)).toContain('+14 more not shown');
    expect(textOf(blocks.at(-1))).toContain('Sandbox platform: simulated');
    expect(validateBlocks(blocks, 'message')).toEqual([]);
  });

  it('caps blocks in order, with nothing to cut when they fit', () => {
    const blocks = Array.from({ length: 5 }, (_, i) => ({ type: 'section', text: { type: 'mrkdwn', text: `s${i}` } })) as KnownBlock[];
    expect(capBlocks(blocks, 5)).toEqual(blocks);
    const cut = capBlocks(blocks, 3);
    expect(cut.map((b) => textOf(b))).toEqual([textOf(blocks[0]), textOf(blocks[1]), expect.stringContaining('+3 more not shown')]);
  });

  it('shows a second comparison table as text: Slack takes one table per message', () => {
    const { blocks } = renderReply({ to: OWNER, text: 'Two comparisons.', parts: [comparisonPart(), comparisonPart()] });
    expect(blocks.filter((b) => b.type === 'table')).toHaveLength(1);
    const asText = blocks.filter((b) => b.type === 'section' && textOf(b).includes('```Questions | Before (95% CI)'));
    expect(asText).toHaveLength(1);
    expect(validateBlocks(blocks, 'message')).toEqual([]);
  });

  it('cuts a table shown as text to one section, saying how many rows were left out', () => {
    const many = compareRuns({
      before: Array.from({ length: 3000 }, (_, i) => ({ questionId: `q${i}`, category: `category-with-a-long-name-${i % 90}`, correct: i % 3 === 0 })),
      after: Array.from({ length: 3000 }, (_, i) => ({ questionId: `q${i}`, category: `category-with-a-long-name-${i % 90}`, correct: i % 2 === 0 })),
    });
    const part = { ...comparisonPart(), comparison: many };
    const { blocks } = renderReply({ to: OWNER, text: 'Two.', parts: [comparisonPart(), part] });
    const asText = blocks.find((b) => b.type === 'section' && textOf(b).includes('```Questions'))! as { text: { text: string } };
    expect(asText.text.text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText);
    expect(asText.text.text).toMatch(/\n\+\d+ more rows```$/);
  });

  it('cuts long labels and more options than an actions block holds', () => {
    const options = Array.from({ length: 30 }, (_, i) => ({ label: `${'m'.repeat(100)}-${i}`, grant: { kind: 'pick' as const, text: `Use ${i}` } }));
    const reply: Reply = { to: OWNER, text: 'Pick one.', parts: [{ kind: 'choices', options }] };
    const [choice] = offeredChoices(reply);
    expect(choice!.buttons).toHaveLength(SLACK_LIMITS.actionsElements);
    for (const b of choice!.buttons) expect(b.label.length).toBeLessThanOrEqual(SLACK_LIMITS.buttonText);
    expect(new Set(choice!.buttons.map((b) => b.actionId)).size).toBe(SLACK_LIMITS.actionsElements);
    expect(validateBlocks(renderReply(reply).blocks, 'message')).toEqual([]);
  });

  it('puts a key in a button whose grant is too large, never a cut (invalid) JSON', () => {
    const huge = { kind: 'pick' as const, text: `Use the model ${'x'.repeat(5000)}` };
    const { blocks } = renderReply({ to: OWNER, text: 'Pick.', parts: [{ kind: 'choices', options: [{ label: 'Huge', grant: huge }] }] });
    const value = (blocks[1] as { elements: Array<{ value: string }> }).elements[0]!.value;
    expect(value.length).toBeLessThanOrEqual(SLACK_LIMITS.buttonValue);
    expect(() => JSON.parse(value)).not.toThrow();
    expect(JSON.parse(value)).toEqual({ ref: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(validateBlocks(blocks, 'message')).toEqual([]);
  });

  it('shows a part kind it does not know (from a newer replica) by the text alone', () => {
    const reply = { to: OWNER, text: 'Hello.', parts: [{ kind: 'chart', url: 'x' } as unknown as ReplyPart] };
    expect(renderReply(reply).blocks).toEqual([{ type: 'section', text: { type: 'mrkdwn', text: `<@${OWNER}> Hello.` } }]);
  });
});

describe('a reply read back from the outbox', () => {
  it('renders the same as when it was written, whatever the comparison holds (jsonb drops undefined, NaN and Infinity)', () => {
    const graded = Array.from({ length: 40 }, (_, i) => ({ questionId: `g${i}`, category: 'any', score: i % 4 === 0 ? 1 : 0.5 }));
    const comparisons = [
      compareRuns({ before: outcomes(100, (i) => i % 10 < 6), after: outcomes(100, (i) => i % 10 < 8) }),
      compareRuns({ before: outcomes(50, () => true), after: outcomes(50, () => true) }),
      compareRuns({ before: outcomes(60, (i) => i < 30), after: outcomes(60, (i) => i < 45), trainedOn: outcomes(60, (i) => i < 30).filter((q) => !q.correct).map((q) => q.questionId) }),
      compareRuns({ before: outcomes(3, () => false), after: outcomes(5, () => false) }),
      compareRuns({ before: graded, after: graded.map((q, i) => ({ ...q, score: i % 2 ? 1 : q.score })), scoring: 'graded', bootstrap: { resamples: 200 } }),
    ];
    for (const comparison of comparisons) {
      const reply: Reply = { to: OWNER, text: 'x', parts: [{ ...comparisonPart(), comparison }], origin: { kind: 'sandbox' } };
      const stored = JSON.parse(JSON.stringify(reply)) as Reply;
      expect(renderReply(stored)).toEqual(renderReply(reply));
    }
  });
});

describe('parts stored with tool results', () => {
  it('reads typed parts as they are, and Block Kit written by an earlier version as legacy blocks', () => {
    const table = { type: 'table', rows: [[{ type: 'raw_text', text: 'a' }]] };
    const actions = { type: 'actions', elements: [] };
    expect(partsFromStored([{ kind: 'retry', triggerId: '1' }])).toEqual([{ kind: 'retry', triggerId: '1' }]);
    expect(partsFromStored([table, actions, { kind: 'retry', triggerId: '1' }, table])).toEqual([
      { kind: 'legacy_blocks', blocks: [table, actions] },
      { kind: 'retry', triggerId: '1' },
      { kind: 'legacy_blocks', blocks: [table] },
    ]);
    expect(partsFromStored(null)).toEqual([]);
  });
});
