// App Home: opening the tab or pressing its buttons queues a refresh of the viewer's Activity view.
import type { App, BlockAction, ButtonAction } from '@slack/bolt';
import { ACTION_IDS } from '../action-ids.js';
import type { ListenerDeps } from './deps.js';

export function registerAppHome(app: App, deps: ListenerDeps): void {
  app.event('app_home_opened', async ({ event, body, context }) => {
    if (event.tab !== 'home') return;
    const teamId = body.team_id ?? context.teamId;
    if (!teamId) return;
    await deps.enqueueHome(teamId, event.user);
  });

  const homeAction = (actionId: string, toOptions: (value: string) => { scope?: string; page?: number; csv?: boolean }) =>
    app.action<BlockAction<ButtonAction>>(actionId, async ({ ack, body, action }) => {
      await ack();
      const teamId = body.team?.id ?? body.user.team_id;
      if (!teamId) return;
      await deps.enqueueHome(teamId, body.user.id, toOptions(action.value ?? ''));
    });

  homeAction(ACTION_IDS.homeScope, (value) => ({ scope: value === 'team' ? 'team' : 'mine' }));
  homeAction(ACTION_IDS.homeMore, (value) => {
    const [scope, page] = value.split(':');
    return { scope: scope === 'team' ? 'team' : 'mine', page: Number(page) || 0 };
  });
  homeAction(ACTION_IDS.homeCsv, (value) => ({ scope: value === 'team' ? 'team' : 'mine', csv: true }));
}
