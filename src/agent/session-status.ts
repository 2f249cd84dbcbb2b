// Which agent-session status a thread shows, from its state. Slack shows its Stop button only while
// a session is `processing`, so a thread stays `processing` as long as a run or training works for it.
import type { SessionFacts } from '../store/agent-sessions.js';

/** The statuses the bot sets (Slack also knows `active`, which the bot does not use). */
export type SessionStatus = 'processing' | 'suspended' | 'closed';

/**
 * `closed` once stopped; `processing` while a run or training works (the loop continues on its own
 * and must stay stoppable); `suspended` while only a person's Approve click can move it on; `closed`
 * otherwise (the turn is over and nothing is waiting).
 */
export function sessionStatusFor(facts: SessionFacts): SessionStatus {
  if (facts.stopped) return 'closed';
  if (facts.working > 0) return 'processing';
  if (facts.awaitingApproval) return 'suspended';
  return 'closed';
}
