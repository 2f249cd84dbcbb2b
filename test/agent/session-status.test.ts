// Which session status a thread shows: pure, no Slack and no database.
import { describe, expect, it } from 'vitest';
import { sessionStatusFor } from '../../src/agent/session-status.js';

describe('sessionStatusFor', () => {
  it('stays processing while a run or training works, so Slack keeps showing Stop', () => {
    expect(sessionStatusFor({ stopped: false, working: 1, awaitingApproval: false })).toBe('processing');
    expect(sessionStatusFor({ stopped: false, working: 2, awaitingApproval: true })).toBe('processing');
  });

  it('is suspended only while an Approve click is awaited and nothing works', () => {
    expect(sessionStatusFor({ stopped: false, working: 0, awaitingApproval: true })).toBe('suspended');
  });

  it('is closed when nothing works or waits, and always once stopped', () => {
    expect(sessionStatusFor({ stopped: false, working: 0, awaitingApproval: false })).toBe('closed');
    expect(sessionStatusFor({ stopped: true, working: 1, awaitingApproval: true })).toBe('closed');
  });
});
