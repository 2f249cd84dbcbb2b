// Reliability (fast variants): SIGKILL at random points, a Postgres restart and two replicas, with the bot as child processes.
import { describe, expect, it } from 'vitest';
import { crashLoop, postgresRestart, replicas } from '../../chaos/faults.js';
import { printFigure } from '../../chaos/lib.js';
import { createTestDatabase } from '../helpers/database.js';

describe('reliability under faults (bot as a child process)', () => {
  it('SIGKILL at random points of the loop, restarted each time: finishes, no duplicate launch or message', async () => {
    const figure = printFigure(await crashLoop({ points: 3, seed: Number(process.env.CHAOS_SEED ?? 1) }));
    expect(figure.failures).toEqual([]);
  }, 180_000);

  it('Postgres restarted mid-loop: the bot reconnects by itself and the loop finishes', async () => {
    const figure = printFigure(await postgresRestart({ restarts: 1 }));
    expect(figure.failures).toEqual([]);
  }, 180_000);

  it('two replicas on one Postgres, one killed mid-turn: every trigger runs exactly once', async () => {
    const figure = printFigure(await replicas({ loops: 2, newDatabase: () => createTestDatabase('replicas') }));
    expect(figure.failures).toEqual([]);
  }, 180_000);
});
