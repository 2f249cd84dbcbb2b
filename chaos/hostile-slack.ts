// Full variant: 3,000 unsigned, wrongly signed, stale and tampered Slack requests, and replays within tolerance.
import { hostileSlack } from './hostile.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => hostileSlack({ runs: 3_000, newDatabase }));
