// The Home tab tells each person where they stand against the spending caps.
import { describe, expect, it } from 'vitest';
import { buildHomeView } from '../../src/slack/blocks/app-home.js';
import type { ActivityTotals } from '../../src/store/activity-queries.js';
import { validateView } from '../kit/fakes/slack/index.js';

const totals: ActivityTotals = { loopsInProgress: 0, creditsSpent: '0', creditsInFlight: '0', agentCostUsd: '0', turns: 0 };

describe('cap standing in the Home tab', () => {
  it('shows the person\'s and the workspace\'s spending against their caps, and says when a cap is reached', () => {
    const view = buildHomeView({
      entries: [],
      totals,
      scope: 'mine',
      page: 0,
      hasMore: false,
      balance: null,
      spending: { person: 2040, personCap: 2000, workspace: 3120.5, workspaceCap: 10000, periodDays: 7 },
    });
    const text = JSON.stringify(view);
    expect(text).toContain('*Your spending cap (last 7 days)*\\n2,040.00 of 2,000.00 credits (reached: launches need an Approve click)');
    expect(text).toContain('*Workspace cap (last 7 days)*\\n3,120.50 of 10,000.00 credits"');
    expect(validateView(view, 'home')).toEqual([]);
    expect(JSON.stringify(buildHomeView({ entries: [], totals, scope: 'mine', page: 0, hasMore: false, balance: null }))).not.toContain('spending cap');
  });
});
