// Full variant: 10,000 random and mutated webhook deliveries, stale replays and an oversized body.
import { hostileWebhooks } from './hostile.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => hostileWebhooks({ runs: 10_000, newDatabase }));
