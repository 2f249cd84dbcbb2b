// Reliability (fast variant): two replicas of the bot on one Postgres, one killed mid-turn.
import { describe, expect, it } from 'vitest';
import { replicas } from '../../chaos/faults.js';
import { printFigure } from '../../chaos/lib.js';
import { createTestDatabase } from '../helpers/database.js';

describe('reliability: two replicas', () => {
  it('two replicas on one Postgres, one killed mid-turn: every trigger runs exactly once', async () => {
    const figure = printFigure(await replicas({ loops: 2, newDatabase: () => createTestDatabase('replicas') }));
    expect(figure.failures).toEqual([]);
  }, 180_000);
});
