// Reliability (fast variant): SIGKILL at random points of the loop, the bot restarted each time.
import { describe, expect, it } from 'vitest';
import { crashLoop } from '../faults.js';
import { printFigure } from '../figure.js';

describe('reliability: the bot process killed', () => {
  it('SIGKILL at random points of the loop, restarted each time: finishes, no duplicate launch or message', async () => {
    const figure = printFigure(await crashLoop({ points: 3, seed: Number(process.env.CHAOS_SEED ?? 1) }));
    expect(figure.failures).toEqual([]);
  }, 180_000);
});
