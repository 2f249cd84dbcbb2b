// Mention and link injection, builder by builder: hostile text from the person, the model and the platform never posts as live Slack syntax.
import { describe, expect, it } from 'vitest';
import { compareRuns, type QuestionOutcome } from '../../src/analysis/index.js';
import { buildHomeView } from '../../src/slack/blocks/app-home.js';
import { verdictChoices } from '../../src/agent/next-steps.js';
import { renderReply } from '../../src/slack/blocks/reply.js';
import { escapeMrkdwn, fromModelMarkdown, link, mentionUser, truncateMrkdwn } from '../../src/slack/mrkdwn.js';
import type { ActivityEntry } from '../../src/store/activity-queries.js';
import { HOSTILE, HOSTILE_TEXT, liveTokensIn } from '../helpers/live-tokens.js';

const OWNER = 'UOWNER1';

describe('the escaping function', () => {
  it('escapes &, < and > as Slack asks, and nothing else', () => {
    expect(escapeMrkdwn('a & b <!channel> > *bold*')).toBe('a &amp; b &lt;!channel&gt; &gt; *bold*');
  });

  it('builds mentions and links only from well-formed ids and safe URLs', () => {
    expect(mentionUser('U12345')).toBe('<@U12345>');
    expect(mentionUser('<!channel>')).toBe('&lt;!channel&gt;');
    expect(link('https://platform.test/runs/r1', 'run <!here>')).toBe('<https://platform.test/runs/r1|run &lt;!here&gt;>');
    expect(link('https://evil.example|Open the report', 'r1')).toBe('r1');
    expect(link('javascript:alert(1)', 'r1')).toBe('r1');
  });

  it("renders the model's Markdown escaped: only the owner's mention stays live, links show their URL", () => {
    const out = fromModelMarkdown(`**Done** <@${OWNER}> and <@U123> <!here> [Open the report](https://evil.example) <https://evil.example|x>`, { ownerUserId: OWNER });
    expect(out).toBe(`*Done* <@${OWNER}> and &lt;@U123&gt; &lt;!here&gt; Open the report (https://evil.example) &lt;https://evil.example|x&gt;`);
    expect(fromModelMarkdown(`<@${OWNER}|owner>`, { ownerUserId: OWNER })).toBe(`<@${OWNER}>`);
    expect(fromModelMarkdown(`<@${OWNER}>`)).toBe(`&lt;@${OWNER}&gt;`);
  });

  it('never cuts an entity in half', () => {
    expect(truncateMrkdwn('abc &amp; def', 7)).toBe('abc…');
    expect(truncateMrkdwn('abc &lt;@U1&gt;', 9)).toBe('abc &lt;…');
  });
});

describe('every renderer, fed hostile strings', () => {
  it('a turn post: the model text (echoing the person) carries no live token but the bot-built owner mention', () => {
    const payload = renderReply({
      to: OWNER,
      text: `You wrote: ${HOSTILE_TEXT}\nSee [Open the report](https://evil.example) and ask <@${OWNER}>.`,
      parts: [],
      origin: { kind: 'sandbox' },
    });
    expect(liveTokensIn(payload, { ownerUserId: OWNER })).toEqual([]);
    expect(payload.text).toContain(`<@${OWNER}>`);
    expect(payload.text).toContain('&lt;!channel&gt;');
    expect(payload.text).toContain('Q&amp;A');
  });

  it('a turn post whose text is nothing but a hostile mention still mentions the owner first', () => {
    const payload = renderReply({ to: OWNER, text: '<@U123>', parts: [] });
    expect(payload.text).toBe(`<@${OWNER}> &lt;@U123&gt;`);
  });

  it('the failure post: the reason is escaped', () => {
    const payload = renderReply({ to: OWNER, text: `I couldn't reach the model: ${HOSTILE_TEXT}, even after retrying.`, parts: [{ kind: 'retry', triggerId: '1' }] });
    expect(liveTokensIn(payload, { ownerUserId: OWNER })).toEqual([]);
  });

  it('the comparison: question ids, category names, model ids and cost labels from the platform', () => {
    const outcomes = (correct: (i: number) => boolean): QuestionOutcome[] =>
      Array.from({ length: 60 }, (_, i) => ({ questionId: `${HOSTILE[i % HOSTILE.length]}-${i}`, category: HOSTILE[i % 3]!, correct: correct(i) }));
    const comparison = compareRuns({ before: outcomes((i) => i % 4 === 0), after: outcomes((i) => i % 4 !== 1 && i % 8 !== 0) });
    expect(comparison.overall.topFixed.length).toBeGreaterThan(0);
    expect(comparison.overall.topBroken.length).toBeGreaterThan(0);
    const { blocks } = renderReply({
      to: OWNER,
      text: 'Compared.',
      parts: [
        {
          kind: 'comparison',
          comparison,
          before: { runId: '<!here>', modelId: '<!channel>' },
          after: { runId: '<@U123>', modelId: '<https://evil.example|Open the report>' },
          cost: { costs: [{ label: `baseline run ${HOSTILE_TEXT}`, credits: 4, charged: true, estimated: 4 }], agentUsd: 0.01, elapsedMs: 1000 },
        },
        {
          kind: 'choices',
          options: verdictChoices(comparison, { benchmarkId: '<!here>', baseModelId: '<!channel>', trainedModelId: '<@U123>', beforeRunId: 'r1', afterRunId: 'r2', augmentation: 5 }),
        },
      ],
    });
    expect(liveTokensIn({ blocks }, { ownerUserId: OWNER })).toEqual([]);
    const text = JSON.stringify(blocks);
    expect(text).toContain('Category: &lt;!channel&gt;');
    expect(text).toContain('Fixed: &lt;');
  });

  it('the Home view: summaries, labels, resources, links, channel and owner from storage', () => {
    const hostile: ActivityEntry = {
      id: '1',
      turnId: '1',
      chatId: '1',
      createdAt: new Date('2026-12-02T14:03:00Z'),
      ownerUserId: '<!channel>',
      channelId: '<!here>',
      threadTs: '1733150000.000100',
      triggerKind: 'mention',
      triggerLabel: HOSTILE_TEXT,
      summary: `You wrote: ${HOSTILE_TEXT} [Open the report](https://evil.example)`,
      postPermalink: 'https://evil.example|Open the report',
      postTs: '1733160000.000001',
      threadPermalink: null,
      resources: [{ kind: '<!here>', platformId: '<@U123>', webUrl: 'https://evil.example>|<!channel', status: '<!channel>', priceEstimate: null, priceCharged: null }],
      agentCostUsd: '0.01',
      creditsEstimated: '0',
      creditsCharged: null,
      creditsInFlight: '0',
    };
    const totals = { loopsInProgress: 0, creditsSpent: '0', creditsInFlight: '0', agentCostUsd: '0', turns: 1 };
    for (const scope of ['mine', 'team'] as const) {
      const view = buildHomeView({ entries: [hostile, { ...hostile, ownerUserId: OWNER, summary: `<@${OWNER}> ${HOSTILE_TEXT}` }], totals, scope, page: 0, hasMore: false, balance: 1 });
      expect(liveTokensIn(view, { ownerUserId: OWNER })).toEqual([]);
    }
  });
});
