// Runs every bench in sequence (or the names given as arguments), e.g. `npm run bench -- slack-ack scale`.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ALL = ['analysis', 'chart', 'startup', 'loop-cost', 'step-overhead', 'webhook-ingest', 'ingest-statement', 'job-queues', 'slack-ack', 'scale'];
// Run only when named: real-loop writes a 1 GB model and takes minutes of CPU (bench/real-loop.ts).
const ON_REQUEST = ['real-loop'];
const names = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ALL;
const unknown = names.filter((n) => !ALL.includes(n) && !ON_REQUEST.includes(n));
if (unknown.length > 0) {
  console.error(`unknown bench: ${unknown.join(', ')}; known: ${[...ALL, ...ON_REQUEST].join(', ')}`);
  process.exit(2);
}
let failed = 0;
for (const name of names) {
  console.log(`\n=== ${name} (npx tsx bench/${name}.ts)`);
  // Each bench in its own process: its figures (RSS, GC, JIT) are not coloured by the previous one.
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, `${name}.ts`)], { stdio: 'inherit' });
  if (result.status !== 0) {
    failed += 1;
    console.error(`${name} exited with ${result.status ?? result.signal}`);
  }
}
process.exit(failed > 0 ? 1 : 0);
