// Full variant: five loops with 20% platform API errors and 30% slow calls.
import { platformFaults } from './faults.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => platformFaults({ loops: 5, apiErrorRate: 0.2, apiSlowRate: 0.3, newDatabase }));
