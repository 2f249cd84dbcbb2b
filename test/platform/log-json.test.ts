// The standalone sandbox's console lines keep what an error says (it printed {"err":{}} before).
import { describe, expect, it } from 'vitest';
import { logJson } from '@verdict/platform/sandbox/log-json';

describe('logJson', () => {
  it('keeps the name, message and code of nested errors', () => {
    const err = Object.assign(new Error('connection terminated'), { code: 'ECONNRESET' });
    expect(JSON.parse(logJson({ err, runId: 'run_1' }))).toEqual({ err: { name: 'Error', message: 'connection terminated', code: 'ECONNRESET' }, runId: 'run_1' });
  });
  it('leaves plain values as JSON.stringify writes them', () => {
    expect(logJson({ a: 1, b: ['x'] })).toBe(JSON.stringify({ a: 1, b: ['x'] }));
  });
});
