// Full variant: a 40,000-character message, three loops on the 2,500-question benchmark and one on the 100,000-question one.
import { oversized } from './hostile.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => oversized({ newDatabase, benchmarkLoops: 3, bigLoops: 1 }));
