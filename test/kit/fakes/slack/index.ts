// The fake Slack: its Web API server, the signed requests Slack sends the bot, and Block Kit's limits.
export { startFakeSlack } from './server.js';
export type * from './types.js';
export * from './requests.js';
export { validateBlocks, validateView, type BlockProblem, type BlockSurface } from './block-kit.js';
