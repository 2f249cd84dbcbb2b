// For the tests that drive a fake Slack with the real @slack/web-api WebClient: its logger, silenced.
import { LogLevel, type Logger } from '@slack/web-api';

export const silentWebApiLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  setLevel: () => undefined,
  getLevel: () => LogLevel.ERROR,
  setName: () => undefined,
};
