// Full variant: 50 concurrent loops behind a proxy that drops, duplicates, delays and reorders their webhooks.
import { webhookStorm } from './faults.js';
import { runChaos } from './lib.js';

await runChaos((newDatabase) => webhookStorm({ loops: Number(process.env.CHAOS_LOOPS ?? 50), platformDuplicate: 1, newDatabase }));
