// Pure rules of buttons that act once: which grants a post offers, how a made choice reads.
import { describe, expect, it } from 'vitest';
import { capExceeded } from '../../src/agent/spend-policy.js';
import { ACTION_IDS, indexedActionId } from '../../src/slack/action-ids.js';
import { alreadyDoneText, offeredChoices, parseGrant, retireChosen } from '../../src/slack/blocks/button-choices.js';

const next = (i: number, runId: string) => ({
  type: 'button',
  text: { type: 'plain_text', text: `Train on failures of ${runId}` },
  action_id: indexedActionId(ACTION_IDS.nextStep, i),
  value: JSON.stringify({ kind: 'next', action: { action: 'train_on_failures', runId, modelId: 'm', heldOutFraction: 0, augmentation: 5 } }),
});

describe('offered choices', () => {
  it('groups the chat buttons of each actions block with their grants, and skips everything else', () => {
    const blocks = [
      { type: 'section', text: { type: 'mrkdwn', text: 'hi' } },
      { type: 'actions', elements: [next(0, 'run_1'), next(1, 'run_2'), { type: 'button', action_id: ACTION_IDS.homeCsv, value: 'mine', text: { type: 'plain_text', text: 'CSV' } }] },
      { type: 'actions', elements: [{ type: 'button', action_id: ACTION_IDS.approve, value: 'not json', text: { type: 'plain_text', text: 'x' } }] },
      {
        type: 'actions',
        elements: [
          {
            type: 'button',
            action_id: ACTION_IDS.approve,
            text: { type: 'plain_text', text: 'Approve 60 credits' },
            value: JSON.stringify({ kind: 'approve', intent: { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'm' }, credits: 60 }),
          },
        ],
      },
    ];
    const choices = offeredChoices(blocks);
    expect(choices.map((c) => c.blockIndex)).toEqual([1, 3]);
    expect(choices[0]!.buttons.map((b) => b.actionId)).toEqual([ACTION_IDS.nextStep, `${ACTION_IDS.nextStep}:1`]);
    expect(choices[0]!.buttons[1]!.grant).toMatchObject({ kind: 'next', action: { runId: 'run_2' } });
    expect(choices[1]!.buttons[0]).toMatchObject({ label: 'Approve 60 credits', grant: { kind: 'approve', credits: 60 } });
    expect(offeredChoices(undefined)).toEqual([]);
  });

  it('parses only grants of a known kind', () => {
    expect(parseGrant('{"kind":"retry","trigger":"1"}')).toEqual({ kind: 'retry', trigger: '1' });
    for (const bad of ['{"kind":"launch_anything"}', 'null', '[]', '{', 42]) expect(parseGrant(bad)).toBeUndefined();
  });

  it('replaces a chosen actions block with who chose what and when, and leaves the rest as posted', () => {
    const blocks = [{ type: 'section', text: { type: 'mrkdwn', text: 'hi' } }, { type: 'actions', elements: [next(0, 'r')] }, { type: 'actions', elements: [next(0, 's')] }];
    const at = new Date('2026-12-03T14:32:00Z');
    const out = retireChosen(blocks, [{ blockIndex: 1, userId: 'UOWNER', label: 'Train <now> & then', at }]);
    expect(out[0]).toBe(blocks[0]);
    expect(out[2]).toBe(blocks[2]);
    const line = JSON.stringify(out[1]);
    expect(out[1]).toMatchObject({ type: 'context' });
    expect(line).toContain('<@UOWNER> chose *Train &lt;now&gt; &amp; then*');
    expect(line).toContain(`<!date^${at.getTime() / 1000}^`);
    expect(line).toContain('2026-12-03 14:32 UTC');
    expect(alreadyDoneText({ userId: 'UOWNER', label: 'Approve 60 credits', at })).toMatch(/^Already done by <@UOWNER>: they chose "Approve 60 credits" .*Nothing was changed\.$/);
  });
});

describe('spending caps', () => {
  const caps = { personCap: 100, workspaceCap: 250, capPeriodDays: 7 };
  it('stops a launch that would pass the person cap or the workspace cap, not one that fits exactly', () => {
    expect(capExceeded({ person: 60, workspace: 60 }, 40, caps)).toBeUndefined();
    expect(capExceeded({ person: 60, workspace: 60 }, 40.01, caps)).toEqual({ scope: 'person', spent: 60, cap: 100 });
    expect(capExceeded({ person: 0, workspace: 240 }, 20, caps)).toEqual({ scope: 'workspace', spent: 240, cap: 250 });
    expect(capExceeded({ person: 500, workspace: 500 }, 0, caps)).toBeUndefined();
  });
});
