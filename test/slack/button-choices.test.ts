// Pure rules of buttons that act once: which grants a reply offers, how their values are written, how a made choice reads.
import { describe, expect, it } from 'vitest';
import type { ButtonGrant, Reply } from '../../src/agent/reply.js';
import { capExceeded } from '../../src/agent/spend-policy.js';
import { ACTION_IDS, indexedActionId } from '../../src/slack/action-ids.js';
import { retireChosen } from '../../src/slack/blocks/button-choices.js';
import { alreadyDoneText } from '../../src/slack/choice-text.js';
import { renderReply } from '../../src/slack/blocks/reply.js';
import { offeredChoices } from '../../src/slack/offered-choices.js';
import { canonicalJson, decodeButtonValue, encodeButtonValue, grantKey, parseGrant } from '../../src/slack/button-value.js';
import { SLACK_LIMITS } from '../../src/slack/limits.js';

const trainGrant = (runId: string): ButtonGrant => ({ kind: 'next', action: { action: 'train_on_failures', runId, modelId: 'm', heldOutFraction: 0, augmentation: 5 } });
const approveGrant: ButtonGrant = { kind: 'approve', intent: { tool: 'benchmark-launch', benchmarkId: '104', modelId: 'm' }, credits: 60 };

/** A legacy actions button, as versions before typed replies wrote it into blocks. */
const legacyNext = (i: number, runId: string) => ({
  type: 'button',
  text: { type: 'plain_text', text: `Train on failures of ${runId}` },
  action_id: indexedActionId(ACTION_IDS.nextStep, i),
  value: JSON.stringify(trainGrant(runId)),
});

describe('offered choices', () => {
  it('numbers the choices of a reply and gives every button an action id unique in the message', () => {
    const reply: Reply = {
      to: 'UOWNER',
      text: 'Two lookups and a refused launch.',
      parts: [
        { kind: 'choices', options: [{ label: 'Use a', grant: { kind: 'pick', text: 'Use a' } }, { label: 'Use b', grant: { kind: 'pick', text: 'Use b' } }] },
        { kind: 'choices', options: [{ label: 'Use c', grant: { kind: 'pick', text: 'Use c' } }] },
        { kind: 'approval', intent: approveGrant.intent, credits: 60 },
        { kind: 'choices', options: [] },
        { kind: 'retry', triggerId: '7' },
      ],
    };
    const choices = offeredChoices(reply);
    expect(choices.map((c) => c.choiceIndex)).toEqual([0, 1, 2, 3]);
    expect(choices.flatMap((c) => c.buttons.map((b) => b.actionId))).toEqual([
      ACTION_IDS.pickOption,
      `${ACTION_IDS.pickOption}:1`,
      `${ACTION_IDS.pickOption}:2`,
      ACTION_IDS.approve,
      ACTION_IDS.retry,
    ]);
    expect(choices[2]!.buttons[0]).toMatchObject({ label: 'Approve 60 credits', grant: approveGrant });
    expect(choices[3]!.buttons[0]!.grant).toEqual({ kind: 'retry', trigger: '7' });
    // What is stored is exactly what is posted.
    const posted = renderReply(reply).blocks.flatMap((b) => (b.type === 'actions' ? b.elements : [])) as Array<{ action_id: string; value: string; text: { text: string } }>;
    expect(posted.map((e) => [e.action_id, e.value, e.text.text])).toEqual(choices.flatMap((c) => c.buttons.map((b) => [b.actionId, b.value, b.label])));
  });

  it('lifts the chat buttons out of blocks stored by an earlier version, and keeps the rest as it was', () => {
    const reply: Reply = {
      to: 'UOWNER',
      text: 'Result',
      parts: [
        {
          kind: 'legacy_blocks',
          blocks: [
            { type: 'section', text: { type: 'mrkdwn', text: 'hi' } },
            { type: 'actions', elements: [legacyNext(0, 'run_1'), legacyNext(1, 'run_2'), { type: 'button', action_id: ACTION_IDS.homeCsv, value: 'mine', text: { type: 'plain_text', text: 'CSV' } }] },
            // A value cut by the old 2,000-character bug: not a grant, so the block stays as it was and offers nothing.
            { type: 'actions', elements: [{ type: 'button', action_id: ACTION_IDS.approve, value: '{"kind":"approve","intent":{', text: { type: 'plain_text', text: 'x' } }] },
            { type: 'actions', elements: [{ type: 'button', action_id: ACTION_IDS.approve, style: 'primary', text: { type: 'plain_text', text: 'Approve 60 credits' }, value: JSON.stringify(approveGrant) }] },
          ],
        },
      ],
    };
    const choices = offeredChoices(reply);
    expect(choices).toHaveLength(2);
    expect(choices[0]!.buttons.map((b) => b.actionId)).toEqual([ACTION_IDS.nextStep, `${ACTION_IDS.nextStep}:1`]);
    expect(choices[0]!.buttons[1]!.grant).toEqual(trainGrant('run_2'));
    expect(choices[1]!.buttons[0]).toMatchObject({ actionId: ACTION_IDS.approve, label: 'Approve 60 credits', grant: approveGrant });
    const blocks = renderReply(reply).blocks as Array<{ type: string; text?: { text: string }; elements?: Array<{ value?: string; style?: string }> }>;
    expect(blocks.map((b) => b.type)).toEqual(['section', 'section', 'actions', 'actions', 'actions']);
    expect(blocks[1]!.text!.text).toBe('hi');
    expect(blocks[3]!.elements![0]!.value).toBe('{"kind":"approve","intent":{');
    expect(blocks[4]!.elements![0]!.style).toBe('primary');
  });
});

describe('button values', () => {
  it('writes a grant as canonical JSON, the same whatever the order of its keys', () => {
    const shuffled = { credits: 60, intent: { modelId: 'm', benchmarkId: '104', tool: 'benchmark-launch' }, kind: 'approve' } as unknown as ButtonGrant;
    expect(encodeButtonValue(shuffled)).toBe(encodeButtonValue(approveGrant));
    expect(encodeButtonValue(approveGrant)).toBe(canonicalJson(approveGrant));
    expect(decodeButtonValue(encodeButtonValue(approveGrant))).toEqual({ grant: approveGrant });
  });

  it('never passes Slack\'s limit: a grant too large to carry becomes the key of the stored grant', () => {
    const huge: ButtonGrant = { kind: 'pick', text: `Use the model ${'x'.repeat(3000)}` };
    const value = encodeButtonValue(huge);
    expect(value.length).toBeLessThanOrEqual(SLACK_LIMITS.buttonValue);
    expect(JSON.parse(value)).toEqual({ ref: grantKey(huge) });
    expect(decodeButtonValue(value)).toEqual({ ref: grantKey(huge) });
    // At the limit exactly the grant is still carried whole.
    const fits = { kind: 'pick', text: '' } as { kind: 'pick'; text: string };
    fits.text = 'y'.repeat(SLACK_LIMITS.buttonValue - canonicalJson(fits).length);
    expect(encodeButtonValue(fits)).toBe(canonicalJson(fits));
    expect(encodeButtonValue(fits)).toHaveLength(SLACK_LIMITS.buttonValue);
    // The offered button stores the full grant with the short value.
    const [choice] = offeredChoices({ to: 'U1', text: 'pick', parts: [{ kind: 'choices', options: [{ label: 'Long', grant: huge }] }] });
    expect(choice!.buttons[0]).toMatchObject({ value, grant: huge });
  });

  it('parses only grants of a known kind and shape', () => {
    expect(parseGrant('{"kind":"retry","trigger":"1"}')).toEqual({ kind: 'retry', trigger: '1' });
    for (const bad of ['{"kind":"launch_anything"}', '{"kind":"approve","credits":5}', 'null', '[]', '{', 42, '{"ref":"nothex"}']) {
      expect(parseGrant(bad)).toBeUndefined();
    }
    expect(decodeButtonValue('{"ref":"nothex"}')).toBeUndefined();
  });
});

describe('a made choice', () => {
  it('replaces the chosen buttons of a reply with who chose what and when, and leaves the rest as posted', () => {
    const reply: Reply = {
      to: 'UOWNER',
      text: 'hi',
      parts: [
        { kind: 'choices', options: [{ label: 'Train <now> & then', grant: trainGrant('r') }] },
        { kind: 'choices', options: [{ label: 'Other', grant: trainGrant('s') }] },
      ],
    };
    const at = new Date('2026-12-03T14:32:00Z');
    const before = renderReply(reply).blocks;
    const after = renderReply(reply, { chosen: [{ choiceIndex: 0, userId: 'UOWNER', label: 'Train <now> & then', at }] }).blocks;
    expect(after[0]).toEqual(before[0]);
    expect(after[2]).toEqual(before[2]);
    const line = JSON.stringify(after[1]);
    expect(after[1]).toMatchObject({ type: 'context' });
    expect(line).toContain('<@UOWNER> chose *Train &lt;now&gt; &amp; then*');
    expect(line).toContain(`<!date^${at.getTime() / 1000}^`);
    expect(line).toContain('2026-12-03 14:32 UTC');
    expect(alreadyDoneText({ userId: 'UOWNER', label: 'Approve 60 credits', at })).toMatch(/^Already done by <@UOWNER>: they chose "Approve 60 credits" .*Nothing was changed\.$/);
  });

  it('retires the chosen actions block of a post stored as blocks by an earlier version', () => {
    const blocks = [{ type: 'section', text: { type: 'mrkdwn', text: 'hi' } }, { type: 'actions', elements: [legacyNext(0, 'r')] }, { type: 'actions', elements: [legacyNext(0, 's')] }];
    const at = new Date('2026-12-03T14:32:00Z');
    const out = retireChosen(blocks, [{ choiceIndex: 1, userId: 'UOWNER', label: 'Train on failures of r', at }]);
    expect(out[0]).toBe(blocks[0]);
    expect(out[2]).toBe(blocks[2]);
    expect(JSON.stringify(out[1])).toContain('<@UOWNER> chose *Train on failures of r*');
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
