// The handler of each trigger kind.
import type { TriggerKind } from '../../store/tables.js';
import { buttonHandler, retryHandler } from './button.js';
import type { TriggerHandler } from './handler.js';
import { mentionHandler } from './mention.js';
import { platformEventHandler } from './platform-event.js';
import { reconcileHandler } from './reconcile.js';
import { stopHandler } from './stop.js';

const HANDLERS: Record<TriggerKind, TriggerHandler> = {
  mention: mentionHandler,
  reply: mentionHandler,
  button: buttonHandler,
  retry: retryHandler,
  platform_event: platformEventHandler,
  reconcile: reconcileHandler,
  stop: stopHandler,
};

export function handlerFor(kind: TriggerKind): TriggerHandler {
  return HANDLERS[kind];
}

export type { DirectReply, Prepared, SkipTurn, TriggerContext, TriggerHandler } from './handler.js';
