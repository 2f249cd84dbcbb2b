// Full variant: two workspaces, each with a loop, probed across every read path.
import { tenantIsolation } from './access.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => tenantIsolation({ newDatabase }));
