// The fake Slack refuses the data tables and charts Slack's docs say it refuses.
import { describe, expect, it } from 'vitest';
import { validateBlocks } from '../kit/fakes/slack/index.js';

const cell = (text: string) => ({ type: 'raw_text', text });
const table = (rows: unknown[][], extra: Record<string, unknown> = {}) => ({ type: 'data_table', caption: 'Questions', rows, ...extra });
const messages = (blocks: unknown[]) => validateBlocks(blocks, 'message').map((p) => p.message);

describe('fake Slack: data_table', () => {
  it('takes a valid table', () => {
    expect(messages([table([[cell('a'), cell('b')], [cell('1'), { type: 'raw_number', value: 2 }]], { page_size: 10 })])).toEqual([]);
  });

  it('refuses each documented violation', () => {
    const row = [cell('x')];
    expect(messages([table([row])])).toEqual([expect.stringContaining('header row and 1 to 100 rows')]);
    expect(messages([table(Array.from({ length: 102 }, () => row))])).toEqual([expect.stringContaining('1 to 100 rows')]);
    expect(messages([table([Array.from({ length: 21 }, () => cell('h')), Array.from({ length: 21 }, () => cell('v'))])]).join()).toContain('1 to 20 columns');
    expect(messages([table([[cell('a'), cell('b')], [cell('1')]])])).toEqual([expect.stringContaining('same number of cells')]);
    expect(messages([table([row, [cell('')]])])).toEqual([expect.stringContaining('at least 1 character')]);
    expect(messages([table([[{ type: 'rich_text', elements: [] }], row])])).toEqual([expect.stringContaining('header cells cannot be rich_text')]);
    expect(messages([table([row, row], { page_size: 101 })])).toEqual([expect.stringContaining('page_size')]);
    expect(messages([{ type: 'data_table', rows: [row, row] }])).toEqual([expect.stringContaining('caption is required')]);
    const big = Array.from({ length: 101 }, () => [cell('y'.repeat(100))]);
    expect(messages([table(big)]).join()).toContain('at most 10000 characters');
  });

  it('counts the cells of every table of a message toward 10,000 characters', () => {
    const rows = Array.from({ length: 60 }, () => [cell('z'.repeat(100))]);
    expect(messages([{ type: 'table', rows }, table(rows)]).join()).toContain('table cells of one message must total at most 10000');
  });
});

describe('fake Slack: data_visualization', () => {
  const bar = (categories: string[], series: Array<{ name: string; data: Array<{ label: string; value: number }> }>, title = 'Accuracy') => ({
    type: 'data_visualization',
    title,
    chart: { type: 'bar', series, axis_config: { categories } },
  });
  const ok = bar(['All', 'math'], [{ name: 'Before', data: [{ label: 'All', value: 50 }, { label: 'math', value: 40 }] }]);

  it('takes a valid bar chart, two per message at most', () => {
    expect(messages([ok])).toEqual([]);
    expect(messages([ok, ok, ok]).join()).toContain('at most two data_visualization');
  });

  it('refuses each documented violation', () => {
    expect(messages([bar(['All'], [{ name: 'B', data: [{ label: 'All', value: 1 }] }], 't'.repeat(51))]).join()).toContain('title must be at most 50');
    expect(messages([bar(['x'.repeat(21)], [{ name: 'B', data: [{ label: 'x'.repeat(21), value: 1 }] }])]).join()).toContain('category label must be at most 20');
    expect(messages([bar(['All'], [{ name: 'B', data: [{ label: 'Other', value: 1 }] }])]).join()).toContain('one of the axis categories');
    const seven = Array.from({ length: 7 }, (_, i) => ({ name: `s${i}`, data: [{ label: 'All', value: 1 }] }));
    expect(messages([bar(['All'], seven)]).join()).toContain('1 to 6 series');
    expect(messages([bar(['All'], [{ name: 'B', data: [] }, { name: 'B', data: [] }])]).join()).toContain('unique');
  });
});
