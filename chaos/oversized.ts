// Full variant: a 40,000-character message and three loops on the 2,500-question benchmark.
import { oversized } from './hostile.js';
import { runChaos } from './lib.js';

await runChaos((newDatabase) => oversized({ newDatabase, benchmarkLoops: 3 }));
