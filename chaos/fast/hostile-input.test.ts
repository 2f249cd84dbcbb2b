// Reliability (fast variants): forged and replayed webhooks and Slack requests, prompt injection, oversized inputs.
import { describe, expect, it } from 'vitest';
import { hostileSlack, hostileWebhooks, malformedSlack, oversized, promptInjection } from '../hostile.js';
import { printFigure } from '../figure.js';

describe('reliability under bad and hostile input', () => {
  it('random and mutated webhooks: never a crash, always 4xx, nothing stored; stale replays rejected', async () => {
    const figure = printFigure(await hostileWebhooks({ runs: 1000 }));
    expect(figure.failures).toEqual([]);
  }, 120_000);

  it('Slack requests unsigned, wrongly signed, stale or tampered: rejected, nothing stored; replays: one turn', async () => {
    const figure = printFigure(await hostileSlack({ runs: 200 }));
    expect(figure.failures).toEqual([]);
  }, 120_000);

  it('signed Slack payloads with a field missing, null or mistyped: 400 with one warning and nothing stored, or taken; never a 5xx', async () => {
    const figure = printFigure(await malformedSlack({ runs: 300 }));
    expect(figure.failures).toEqual([]);
  }, 180_000);

  it('prompt injection in benchmark data reaches the model only as data; an obedient model is refused', async () => {
    const figure = printFigure(await promptInjection({}));
    expect(figure.failures).toEqual([]);
  }, 120_000);

  it('a 40,000-character message, the 2,500- and the 100,000-question benchmarks: within Slack limits, memory bounded', async () => {
    const figure = printFigure(await oversized({ bigLoops: 1 }));
    expect(figure.failures).toEqual([]);
  }, 180_000);
});
