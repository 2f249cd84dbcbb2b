// What a reliability scenario reports: its checks, the figure line the docs quote, and a full variant's exit code.
import { startPrivatePostgres, type NewDatabase } from '../test/kit/database.js';

export interface Figure {
  fault: string;
  tried: string;
  times: number;
  held: string;
  ms: number;
  failures: string[];
  extra?: Record<string, number | string>;
}

export class Checks {
  readonly failures: string[] = [];
  check(condition: unknown, message: string): void {
    if (!condition) this.failures.push(message);
  }
  equal(actual: unknown, expected: unknown, message: string): void {
    const a = JSON.stringify(actual);
    const e = JSON.stringify(expected);
    if (a !== e) this.failures.push(`${message}: got ${a}, expected ${e}`);
  }
}

export function printFigure(figure: Figure): Figure {
  const extra = figure.extra ? ` ${Object.entries(figure.extra).map(([k, v]) => `${k}=${v}`).join(' ')}` : '';
  console.log(
    `[reliability] ${figure.fault} | ${figure.tried} | x${figure.times} | ${figure.failures.length === 0 ? 'HELD' : 'FAILED'}: ${figure.held} | ${(figure.ms / 1000).toFixed(1)} s${extra}${figure.failures.length ? ` | ${figure.failures.slice(0, 5).join('; ')}` : ''}`,
  );
  return figure;
}

/** Runs a full-variant chaos script: a private Postgres, the scenario, the figure, exit code. */
export async function runChaos(scenario: (newDatabase: NewDatabase) => Promise<Figure>): Promise<void> {
  const pgServer = await startPrivatePostgres();
  let failed = true;
  try {
    const figure = printFigure(await scenario(pgServer.newDatabase));
    failed = figure.failures.length > 0;
    if (failed) for (const f of figure.failures) console.error(`  - ${f}`);
  } finally {
    await pgServer.stop();
  }
  process.exit(failed ? 1 : 0);
}

