// Full variant: an end-to-end run with errors on every side, scanned for every configured secret; linked logs.
import { secretsAndLogs } from './access.js';
import { runChaos } from './figure.js';

await runChaos((newDatabase) => secretsAndLogs({ newDatabase }));
