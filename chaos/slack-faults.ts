// Full variant: Slack 429s with Retry-After and 500s during a loop and a burst of 20 mentions in one channel.
import { slackFaults } from './faults.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => slackFaults({ rateLimited: 5, serverErrors: 3, burst: 20, newDatabase }));
