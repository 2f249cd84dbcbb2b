// Publishes a user's App Home view (the Activity log).
import type { Logger } from 'pino';
import type { Db } from '../store/db.js';
import type { SlackClients } from './poster.js';

export interface HomePublisher {
  publish(teamId: string, userId: string, options: { scope?: string; page?: number; csv?: boolean }): Promise<void>;
}

export function createHomePublisher(deps: { db: Db; clients: SlackClients; logger: Logger }): HomePublisher {
  return {
    publish: async (_teamId, userId) => {
      await deps.clients.writer.views.publish({
        user_id: userId,
        view: { type: 'home', blocks: [{ type: 'header', text: { type: 'plain_text', text: 'Activity' } }] },
      });
    },
  };
}
