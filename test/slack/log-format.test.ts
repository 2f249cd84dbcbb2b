import { describe, expect, it } from 'vitest';
import { formatLogArgs } from '../../src/slack/log-format.js';

describe("the Bolt and Web API loggers' message formatting", () => {
  it('inspects objects and errors instead of printing [object Object]', () => {
    const text = formatLogArgs(['An unhandled error occurred while Bolt processed an event', { type: 'app_mention', ts: '1.2' }, new Error('boom')]);
    expect(text).toBe("An unhandled error occurred while Bolt processed an event { type: 'app_mention', ts: '1.2' } boom");
    expect(text).not.toContain('[object Object]');
  });
});
