// Reliability (fast variant): two replicas of the bot on one Postgres, one killed mid-turn.
import { describe, expect, it } from 'vitest';
import { replicas } from '../faults.js';
import { printFigure } from '../figure.js';
import { createTestDatabase } from '../../test/kit/database.js';

describe('reliability: two replicas', () => {
  it('two replicas on one Postgres, one killed mid-turn: every trigger runs exactly once', async () => {
    const figure = printFigure(await replicas({ loops: 2, newDatabase: () => createTestDatabase('replicas') }));
    expect(figure.failures).toEqual([]);
  }, 180_000);
});
