// Reliability (fast variant): Postgres restarted mid-loop, with the bot as a child process.
import { describe, expect, it } from 'vitest';
import { postgresRestart } from '../faults.js';
import { printFigure } from '../figure.js';

describe('reliability: Postgres restarted', () => {
  it('Postgres restarted mid-loop: the bot reconnects by itself and the loop finishes', async () => {
    const figure = printFigure(await postgresRestart({ restarts: 1 }));
    expect(figure.failures).toEqual([]);
  }, 240_000);
});
