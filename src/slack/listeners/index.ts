// Registers every Slack listener on the Bolt app.
import type { App } from '@slack/bolt';
import { registerAppHome } from './app-home.js';
import { registerAgentSessionStopped } from './agent-session-stopped.js';
import { registerAppMention } from './app-mention.js';
import { registerChatActions } from './chat-actions.js';
import type { ListenerDeps } from './deps.js';
import { registerThreadMessage } from './thread-message.js';
import { registerUninstall } from './uninstall.js';
import { registerVerdictFeedback } from './verdict-feedback.js';

export function registerListeners(app: App, deps: ListenerDeps): void {
  registerAppMention(app, deps);
  registerThreadMessage(app, deps);
  registerChatActions(app, deps);
  registerAppHome(app, deps);
  registerAgentSessionStopped(app, deps);
  registerVerdictFeedback(app, deps);
  registerUninstall(app, deps);
}

export type { ListenerDeps };
