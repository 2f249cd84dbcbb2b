// Reliability (fast variants): tenant isolation, who may spend, no secret in any output, logs linked by trigger id.
import { describe, expect, it } from 'vitest';
import { secretsAndLogs, spendPermissions, tenantIsolation } from '../access.js';
import { printFigure } from '../figure.js';

describe('access and secrets', () => {
  it('two workspaces: every read path shows nothing of the other', async () => {
    const figure = printFigure(await tenantIsolation({}));
    expect(figure.failures).toEqual([]);
  }, 120_000);

  it('only the owner or a configured admin can approve spending', async () => {
    const figure = printFigure(await spendPermissions({}));
    expect(figure.failures).toEqual([]);
  }, 120_000);

  it('no secret in logs, Slack messages, model requests or errors; JSON logs linked by trigger id', async () => {
    const figure = printFigure(await secretsAndLogs({}));
    expect(figure.failures).toEqual([]);
  }, 120_000);
});
