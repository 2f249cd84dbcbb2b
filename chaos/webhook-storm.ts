// Full variant: 50 concurrent loops behind a proxy that drops, duplicates, delays and reorders their webhooks (over 1,000 deliveries).
import { webhookStorm } from './faults.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => webhookStorm({ loops: Number(process.env.CHAOS_LOOPS ?? 50), platformDuplicate: 1, proxyDuplicate: 1, newDatabase }));
