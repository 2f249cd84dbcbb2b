// Which process a connection's backend is: only a local Postgres backend whose title names our side
// of the connection is reniced; a pid reported by a database on another machine is left alone.
import { describe, expect, it } from 'vitest';
import { isLocalBackend } from '../../src/priority.js';

const titles: Record<number, string> = {
  4101: 'postgres: verdict-bot: postgres bot 127.0.0.1(51234) idle',
  4102: 'postgres: verdict-bot: postgres bot [local] idle in transaction',
  4103: 'node /srv/other-app/server.js',
};
const read = (pid: number) => {
  const title = titles[pid];
  if (title === undefined) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
  return title;
};

describe('isLocalBackend', () => {
  it('takes a backend whose title names our local port, and no other', () => {
    expect(isLocalBackend({ pid: 4101, localPort: 51234, database: 'bot' }, read)).toBe(true);
    // Same pid number, another connection (a remote server's pid that happens to exist here).
    expect(isLocalBackend({ pid: 4101, localPort: 40000, database: 'bot' }, read)).toBe(false);
  });

  it('over a Unix socket, a [local] backend of our database', () => {
    expect(isLocalBackend({ pid: 4102, localPort: undefined, database: 'bot' }, read)).toBe(true);
    expect(isLocalBackend({ pid: 4102, localPort: undefined, database: 'other' }, read)).toBe(false);
  });

  it('never a process that is not Postgres, nor one that does not exist here', () => {
    expect(isLocalBackend({ pid: 4103, localPort: 51234, database: 'bot' }, read)).toBe(false);
    expect(isLocalBackend({ pid: 4999, localPort: 51234, database: 'bot' }, read)).toBe(false);
  });
});
