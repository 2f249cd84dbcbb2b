// Reliability (fast variants): Slack, model and platform outages and a webhook storm, against the real bot in-process.
import { describe, expect, it } from 'vitest';
import { modelOutage, platformFaults, slackFaults, webhookStorm } from '../faults.js';
import { printFigure } from '../figure.js';

describe('reliability under faults (in-process bot)', () => {
  it('Slack 429 with Retry-After and 500s: every message once, in order, within the rate limits', async () => {
    const figure = printFigure(await slackFaults({ rateLimited: 1, serverErrors: 1, burst: 4 }));
    expect(figure.failures).toEqual([]);
  }, 120_000);

  it('model API overloaded for a while: the loop resumes by itself; a permanent failure leaves a message and a Retry button', async () => {
    const figure = printFigure(await modelOutage({ outageMs: 3_000 }));
    expect(figure.failures).toEqual([]);
  }, 120_000);

  it('platform API errors and slowness: the loop finishes', async () => {
    const figure = printFigure(await platformFaults({ loops: 1, apiErrorRate: 0.2, apiSlowRate: 0.2 }));
    expect(figure.failures).toEqual([]);
  }, 120_000);

  it('webhooks duplicated, reordered, delayed and dropped across concurrent loops: one launch per step', async () => {
    const figure = printFigure(await webhookStorm({ loops: 5 }));
    expect(figure.failures).toEqual([]);
  }, 180_000);
});
