// Full variant: two replicas on one Postgres running six loops, one killed mid-turn.
import { replicas } from './faults.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => replicas({ loops: 6, newDatabase }));
