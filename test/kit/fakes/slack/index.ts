// The fake Slack: its Web API server, the signed requests Slack sends the bot, Block Kit's limits, and a
// minimal Socket Mode Slack.
export { startFakeSlack } from './server.js';
export { startMiniSlack, type MiniSlack } from './socket-mode.js';
export type * from './types.js';
export * from './requests.js';
export { validateBlocks, validateView, type BlockProblem, type BlockSurface } from './block-kit.js';
export { planStates, type PlanState, type PlanTaskState } from './plan-states.js';
