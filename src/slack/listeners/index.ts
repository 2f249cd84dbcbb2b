// Registers every Slack listener on the Bolt app.
import type { App } from '@slack/bolt';
import { registerAppHome } from './app-home.js';
import { registerAppMention } from './app-mention.js';
import { registerChatActions } from './chat-actions.js';
import type { ListenerDeps } from './deps.js';
import { registerThreadMessage } from './thread-message.js';
import { registerVerdictFeedback } from './verdict-feedback.js';

export function registerListeners(app: App, deps: ListenerDeps): void {
  registerAppMention(app, deps);
  registerThreadMessage(app, deps);
  registerChatActions(app, deps);
  registerAppHome(app, deps);
  registerVerdictFeedback(app, deps);
}

export type { ListenerDeps };
