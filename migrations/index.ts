// The ordered list of migrations, imported statically so the bot runs the same from source or a build.
import type { Migration } from 'kysely';
import * as initial from './2026-12-02-001-initial.js';
import * as channelPostSlots from './2026-12-03-001-channel-post-slots.js';
import * as launchAuthorizations from './2026-12-03-002-launch-authorizations.js';
import * as buttonChoices from './2026-12-03-003-button-choices.js';
import * as agentSessions from './2026-12-05-001-agent-sessions.js';
import * as planMessages from './2026-12-05-002-plan-messages.js';
import * as comparisonFiles from './2026-12-05-003-comparison-files.js';
import * as verdictFeedback from './2026-12-05-004-verdict-feedback.js';
import * as quietTurnJobs from './2026-12-05-005-quiet-turn-jobs.js';
import * as planUpdateSlots from './2026-12-05-006-plan-update-slots.js';
import * as turnOwners from './2026-12-05-007-turn-owners.js';
import * as ingestSlackFunction from './2026-12-06-001-ingest-slack-function.js';
import * as chatQueueGc from './2026-12-07-001-chat-queue-gc.js';
import * as planQueueGc from './2026-12-07-002-plan-queue-gc.js';
import * as publicJobApi from './2026-12-07-003-public-job-api.js';
import * as slackInstallations from './2026-12-07-004-slack-installations.js';
import * as resourcesToolCall from './2026-12-08-001-resources-tool-call.js';
import * as launchAuthorizationsRecorded from './2026-12-08-002-launch-authorizations-recorded.js';

export const migrations: Record<string, Migration> = {
  '2026-12-02-001-initial': initial,
  '2026-12-03-001-channel-post-slots': channelPostSlots,
  '2026-12-03-002-launch-authorizations': launchAuthorizations,
  '2026-12-03-003-button-choices': buttonChoices,
  '2026-12-05-001-agent-sessions': agentSessions,
  '2026-12-05-002-plan-messages': planMessages,
  '2026-12-05-003-comparison-files': comparisonFiles,
  '2026-12-05-004-verdict-feedback': verdictFeedback,
  '2026-12-05-005-quiet-turn-jobs': quietTurnJobs,
  '2026-12-05-006-plan-update-slots': planUpdateSlots,
  '2026-12-05-007-turn-owners': turnOwners,
  '2026-12-06-001-ingest-slack-function': ingestSlackFunction,
  '2026-12-07-001-chat-queue-gc': chatQueueGc,
  '2026-12-07-002-plan-queue-gc': planQueueGc,
  '2026-12-07-003-public-job-api': publicJobApi,
  '2026-12-07-004-slack-installations': slackInstallations,
  '2026-12-08-001-resources-tool-call': resourcesToolCall,
  '2026-12-08-002-launch-authorizations-recorded': launchAuthorizationsRecorded,
};
