// The App Home tab: views.publish, checked against Slack's view limits, the latest view kept per user.
import { validateView } from './block-kit.js';
import type { Workspace } from './state.js';
import { fail, ok, refuseInvalid, str, type MethodHandler, type Team } from './wire.js';

/** A view as Slack answers it. */
function viewJson(team: Team, id: string, view: Record<string, unknown>): Record<string, unknown> {
  return {
    id,
    team_id: team.teamId,
    type: view.type,
    blocks: view.blocks ?? [],
    private_metadata: view.private_metadata ?? '',
    callback_id: view.callback_id ?? '',
    state: { values: {} },
    hash: `${Date.now()}.${id}`,
    title: view.title ?? null,
    close: view.close ?? null,
    submit: view.submit ?? null,
    clear_on_close: false,
    notify_on_close: false,
    root_view_id: id,
    previous_view_id: null,
    app_id: team.appId,
    external_id: view.external_id ?? '',
    app_installed_team_id: team.teamId,
    bot_id: team.botId,
  };
}

export function viewMethods(ws: Workspace): Record<string, MethodHandler> {
  return {
    'views.publish': ({ method, args, team }) => {
      const user = str(args.user_id);
      if (!user) return fail('invalid_arguments');
      const problems = validateView(args.view, 'home');
      if (problems.length > 0) return refuseInvalid(ws.violations, method, 'invalid_arguments', problems);
      const view = viewJson(team, ws.nextId('V'), args.view as Record<string, unknown>);
      ws.homeViews.set(user, view);
      return ok({ view });
    },
  };
}
