// docs/walkthrough.md is what the bot writes: a fresh run of the loop must match it, ports and times aside.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateWalkthrough, maskVolatile, WALKTHROUGH_PATH } from '../../scripts/transcript.js';
import { createTestDatabase } from '../kit/database.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('docs/walkthrough.md', () => {
  it('matches what the bot writes today', async () => {
    const fresh = maskVolatile(await generateWalkthrough({ databaseUrl: await createTestDatabase('walkthrough') }));
    const committed = maskVolatile(await readFile(WALKTHROUGH_PATH, 'utf8'));
    expect(
      committed,
      'docs/walkthrough.md no longer matches what the bot writes: run `npm run walkthrough` and commit docs/walkthrough.md (the diff below is committed vs fresh, ports, elapsed and finish times masked)',
    ).toBe(fresh);
  }, 180_000);

  it("the README's excerpt is in it, line by line", async () => {
    const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
    const excerpt = readme.split('Its last message, rendered as text:')[1]?.split('```')[1];
    expect(excerpt, 'README.md lost its walkthrough excerpt').toBeDefined();
    const walkthrough = maskVolatile(await readFile(WALKTHROUGH_PATH, 'utf8')).split('\n').map((line) => line.trimEnd());
    const lines = excerpt!.split('\n').slice(1).filter((line) => line.trim() !== '' && !line.includes('...'));
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) {
      expect(walkthrough, `README.md's walkthrough excerpt has a line docs/walkthrough.md does not: update the excerpt from it`).toContain(maskVolatile(line).trimEnd());
    }
  });

  it('masks only ports, elapsed times and finish clock times', () => {
    expect(maskVolatile('link http://127.0.0.1:38299/runs/run_1 · elapsed 7s · elapsed 1m 5s · $0.0360 agent · 4.11 credits · around 15:20 UTC')).toBe(
      'link http://127.0.0.1:PORT/runs/run_1 · elapsed Ns · elapsed Ns · $0.0360 agent · 4.11 credits · around HH:MM UTC',
    );
  });
});
