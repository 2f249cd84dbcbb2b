// Full variant: SIGKILL at 30 random points across full loops, restarting each time (CHAOS_SEED to replay).
import { crashLoop } from './faults.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => crashLoop({ points: Number(process.env.CHAOS_POINTS ?? 30), seed: Number(process.env.CHAOS_SEED ?? 1), newDatabase }));
