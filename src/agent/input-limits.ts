// How much of what people send the model reads: bounded, with a note, so a huge input costs nothing extra.

/**
 * The model reads at most what a Slack message, button label or button value can carry (those
 * figures are Slack's, restated from src/slack/limits.ts so the agent imports nothing from slack/;
 * test/agent/input-limits.test.ts keeps them equal), and a whole turn's input at most `turnInput`.
 */
export const INBOUND_LIMITS = {
  messageText: 40_000,
  buttonValue: 2000,
  buttonLabel: 75,
  /** The whole user message of one turn (the trigger's text, the plan, the facts of an event). */
  turnInput: 60_000,
} as const;

/** Cuts inbound text to `max` characters and says how much was cut, so the model knows it saw part. */
export function boundInbound(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[… ${text.length - max} more characters cut: the bot reads at most ${max}]`;
}
