// Full variant: a dedicated Postgres stopped and started three times while three loops run.
import { postgresRestart } from './faults.js';
import { runChaos } from './figure.js';

await runChaos(() => postgresRestart({ restarts: 3 }));
