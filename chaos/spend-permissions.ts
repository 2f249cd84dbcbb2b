// Full variant: non-owners and an admin pressing spend buttons.
import { spendPermissions } from './access.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => spendPermissions({ newDatabase }));
