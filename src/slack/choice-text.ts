// How a made choice reads in words: the line that replaces a used set of buttons, the answer to a late click.
import { escapeMrkdwn } from './mrkdwn.js';

/** A choice someone made in a post. */
export interface MadeChoice {
  /**
   * The choice's position in its post: in a typed reply, the index of the choice among the reply's
   * choices (see `choiceGroups`); in a post stored as blocks by an earlier version, its actions block's index.
   */
  choiceIndex: number;
  userId: string;
  label: string;
  at: Date;
}

/** Slack renders this in the reader's own time zone; the fallback is UTC. */
function slackDate(at: Date): string {
  const epoch = Math.floor(at.getTime() / 1000);
  const fallback = `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return `<!date^${epoch}^{date_short_pretty} at {time}|${fallback}>`;
}

/** "<@U> chose *Label* on <date>": the line that replaces a used set of buttons. */
export function choiceLine(choice: Omit<MadeChoice, 'choiceIndex'>): string {
  return `:white_check_mark: <@${choice.userId}> chose *${escapeMrkdwn(choice.label)}* ${slackDate(choice.at)}`;
}

/** The ephemeral answer to a click on a button whose choice was already made. */
export function alreadyDoneText(choice: Omit<MadeChoice, 'choiceIndex'>): string {
  return `Already done by <@${choice.userId}>: they chose "${escapeMrkdwn(choice.label)}" ${slackDate(choice.at)}. Nothing was changed.`;
}
