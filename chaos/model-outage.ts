// Full variant: the model API answers 529 for two minutes from the first platform event, then a permanent outage.
import { modelOutage } from './faults.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => modelOutage({ outageMs: Number(process.env.CHAOS_OUTAGE_MS ?? 120_000), newDatabase }));
