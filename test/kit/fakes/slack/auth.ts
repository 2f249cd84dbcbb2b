// auth.test: which workspace, bot user and bot a token belongs to (Bolt asks at start-up).
import { ok, type MethodHandler } from './wire.js';

export function authMethods(): Record<string, MethodHandler> {
  return {
    'auth.test': ({ team }) =>
      ok({
        url: `https://${team.domain}.slack.test/`,
        team: team.teamName,
        user: 'verdict-bot',
        team_id: team.teamId,
        user_id: team.botUserId,
        bot_id: team.botId,
        is_enterprise_install: team.isEnterpriseInstall === true,
        ...(team.enterpriseId ? { enterprise_id: team.enterpriseId } : {}),
      }),
  };
}
