// app_uninstalled and tokens_revoked: the workspace's tokens are deleted (OAuth mode); its chats,
// Activity log and spending stay, and its loops wait quietly for a reinstall.
import type { App } from '@slack/bolt';
import type { ListenerDeps } from './deps.js';

export function registerUninstall(app: App, deps: ListenerDeps): void {
  const remove = async (why: string, context: { teamId?: string | undefined; enterpriseId?: string | undefined; isEnterpriseInstall?: boolean | undefined }) => {
    const where = { teamId: context.teamId, enterpriseId: context.enterpriseId, isEnterpriseInstall: context.isEnterpriseInstall === true };
    if (!deps.installations) {
      deps.logger.warn(where, `${why}: SLACK_BOT_TOKEN no longer works in this workspace; reinstall the app and set the new token`);
      return;
    }
    await deps.installations.deleteInstallation({
      teamId: context.teamId,
      enterpriseId: context.enterpriseId,
      isEnterpriseInstall: context.isEnterpriseInstall === true,
    } as Parameters<NonNullable<ListenerDeps['installations']>['deleteInstallation']>[0]);
    deps.logger.info(where, `${why}: the workspace's tokens are deleted; its data stays until a reinstall resumes it`);
  };

  app.event('app_uninstalled', async ({ context }) => remove('app uninstalled', context));

  app.event('tokens_revoked', async ({ event, context }) => {
    // Only the bot token is used; a revoked user token (none is requested) changes nothing.
    if ((event.tokens.bot ?? []).length === 0) return;
    await remove('bot token revoked', context);
  });
}
