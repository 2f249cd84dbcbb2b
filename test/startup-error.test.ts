import { describe, expect, it } from 'vitest';
import { describeError, redactUrl } from '@verdict/runtime/startup-error';

describe('describeError', () => {
  it('never says "undefined" or prints an empty cause', () => {
    expect(describeError(undefined)).toBe('an unexplained failure (undefined was thrown)');
    expect(describeError(new Error('disk full'))).toBe('disk full');
    expect(describeError(Object.assign(new Error(''), { code: 'ECONNREFUSED' }))).toBe('ECONNREFUSED');
    const aggregate = new AggregateError(
      [new Error('connect ECONNREFUSED ::1:5432'), new Error('connect ECONNREFUSED 127.0.0.1:5432')],
      '',
    );
    expect(describeError(aggregate)).toBe('connect ECONNREFUSED ::1:5432; connect ECONNREFUSED 127.0.0.1:5432');
    expect(describeError({})).toBe('Object without a message');
    expect(describeError('line one\nline two')).toBe('line one line two');
  });

  it('hides the password of a connection string', () => {
    expect(redactUrl('postgres://bot:s3cret@db:5432/verdict')).toBe('postgres://bot:***@db:5432/verdict');
    expect(redactUrl('postgres://db/verdict')).toBe('postgres://db/verdict');
  });
});
