// Full variant: the loop on the injection benchmark, then a model that obeys the injection.
import { promptInjection } from './hostile.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => promptInjection({ newDatabase }));
