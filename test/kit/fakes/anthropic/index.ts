// The scripted Messages API: its server, its types, and the helpers scripts are written with.
export { startScriptedAnthropic } from './server.js';
export type * from './types.js';
export { allText, lastToolResults, lastUserContent, text, toolUse, type ResolvedToolResult } from './script.js';
