// Block Kit limit checks used by the fake Slack API to refuse payloads the real Slack would refuse.

/** Where blocks are rendered; the block count limit differs between messages and views. */
export type BlockSurface = 'message' | 'home';

/** One reason Slack would answer `invalid_blocks`, with a JSON pointer into the request argument. */
export interface BlockProblem {
  pointer: string;
  message: string;
}

const MAX_BLOCKS: Record<BlockSurface, number> = { message: 50, home: 100 };

type Obj = Record<string, unknown>;

const isObj = (value: unknown): value is Obj => typeof value === 'object' && value !== null && !Array.isArray(value);

class Checker {
  readonly problems: BlockProblem[] = [];

  add(pointer: string, message: string): void {
    this.problems.push({ pointer, message });
  }

  maxLength(value: unknown, pointer: string, what: string, max: number): void {
    if (typeof value === 'string' && value.length > max) {
      this.add(pointer, `${what} must be at most ${max} characters (got ${value.length})`);
    }
  }

  text(
    value: unknown,
    pointer: string,
    what: string,
    limits: { max: number; required?: boolean; plainOnly?: boolean },
  ): void {
    if (value === undefined || value === null) {
      if (limits.required) this.add(pointer, `${what} is required`);
      return;
    }
    if (!isObj(value) || typeof value.text !== 'string') {
      this.add(pointer, `${what} must be a text object with a string text`);
      return;
    }
    if (value.type !== 'plain_text' && value.type !== 'mrkdwn') {
      this.add(`${pointer}/type`, `${what} type must be plain_text or mrkdwn (got ${String(value.type)})`);
    } else if (limits.plainOnly && value.type !== 'plain_text') {
      this.add(`${pointer}/type`, `${what} must be plain_text`);
    }
    if (value.text.length === 0) this.add(`${pointer}/text`, `${what} must not be empty`);
    this.maxLength(value.text, `${pointer}/text`, what, limits.max);
  }

  options(value: unknown, pointer: string, min: number, max: number): void {
    if (value === undefined) return;
    if (!Array.isArray(value)) {
      this.add(pointer, 'options must be an array');
      return;
    }
    if (value.length < min || value.length > max) {
      this.add(pointer, `options must have ${min} to ${max} items (got ${value.length})`);
    }
    value.forEach((option: unknown, i) => {
      const p = `${pointer}/${i}`;
      if (!isObj(option)) {
        this.add(p, 'option must be an object');
        return;
      }
      this.text(option.text, `${p}/text`, 'option text', { max: 75, required: true });
      this.maxLength(option.value, `${p}/value`, 'option value', 150);
      this.text(option.description, `${p}/description`, 'option description', { max: 75 });
    });
  }

  confirm(value: unknown, pointer: string): void {
    if (!isObj(value)) return;
    this.text(value.title, `${pointer}/title`, 'confirm title', { max: 100, plainOnly: true });
    this.text(value.text, `${pointer}/text`, 'confirm text', { max: 300 });
    this.text(value.confirm, `${pointer}/confirm`, 'confirm button', { max: 30, plainOnly: true });
    this.text(value.deny, `${pointer}/deny`, 'deny button', { max: 30, plainOnly: true });
  }

  /** One button of a feedback_buttons element (Slack's docs: plain_text text up to 75, value up to 2000, label up to 75). */
  feedbackButton(value: unknown, pointer: string, which: string): void {
    if (!isObj(value)) {
      this.add(pointer, `feedback_buttons ${which} is required`);
      return;
    }
    this.text(value.text, `${pointer}/text`, `${which} text`, { max: 75, required: true, plainOnly: true });
    if (typeof value.value !== 'string' || value.value.length === 0) this.add(`${pointer}/value`, `${which} value is required`);
    this.maxLength(value.value, `${pointer}/value`, `${which} value`, 2000);
    this.maxLength(value.accessibility_label, `${pointer}/accessibility_label`, `${which} accessibility_label`, 75);
  }

  /**
   * A context_actions block's element: feedback_buttons or icon_button only (@slack/types
   * ContextActionsBlockElement); feedback_buttons is refused anywhere else (see `element`).
   */
  contextActionsElement(value: unknown, pointer: string, actionIds: Set<string>): void {
    if (!isObj(value) || (value.type !== 'feedback_buttons' && value.type !== 'icon_button')) {
      this.add(pointer, `context_actions elements must be feedback_buttons or icon_button (got ${String(isObj(value) ? value.type : value)})`);
      return;
    }
    if (value.type === 'icon_button') {
      if (typeof value.icon !== 'string' || value.icon.length === 0) this.add(`${pointer}/icon`, 'icon_button icon is required');
      this.text(value.text, `${pointer}/text`, 'icon_button text', { max: 75, required: true, plainOnly: true });
      this.maxLength(value.value, `${pointer}/value`, 'icon_button value', 2000);
    }
    this.element(value, pointer, actionIds, 'context_actions');
  }

  element(value: unknown, pointer: string, actionIds: Set<string>, container = 'other'): void {
    if (!isObj(value) || typeof value.type !== 'string') {
      this.add(pointer, 'element must be an object with a string type');
      return;
    }
    if (value.action_id !== undefined) {
      if (typeof value.action_id !== 'string') this.add(`${pointer}/action_id`, 'action_id must be a string');
      else {
        this.maxLength(value.action_id, `${pointer}/action_id`, 'action_id', 255);
        if (actionIds.has(value.action_id)) {
          this.add(`${pointer}/action_id`, `action_id ${value.action_id} is not unique in its block`);
        }
        actionIds.add(value.action_id);
      }
    }
    this.confirm(value.confirm, `${pointer}/confirm`);
    switch (value.type) {
      case 'button':
        this.text(value.text, `${pointer}/text`, 'button text', { max: 75, required: true, plainOnly: true });
        this.maxLength(value.value, `${pointer}/value`, 'button value', 2000);
        this.maxLength(value.url, `${pointer}/url`, 'button url', 3000);
        this.maxLength(value.accessibility_label, `${pointer}/accessibility_label`, 'button accessibility_label', 75);
        if (value.style !== undefined && value.style !== 'primary' && value.style !== 'danger') {
          this.add(`${pointer}/style`, `button style must be primary or danger (got ${String(value.style)})`);
        }
        break;
      case 'static_select':
      case 'multi_static_select':
        this.options(value.options, `${pointer}/options`, 1, 100);
        this.text(value.placeholder, `${pointer}/placeholder`, 'placeholder', { max: 150, plainOnly: true });
        break;
      case 'overflow':
        this.options(value.options, `${pointer}/options`, 1, 5);
        break;
      case 'radio_buttons':
      case 'checkboxes':
        this.options(value.options, `${pointer}/options`, 1, 10);
        break;
      case 'image':
        this.maxLength(value.image_url, `${pointer}/image_url`, 'image_url', 3000);
        this.maxLength(value.alt_text, `${pointer}/alt_text`, 'alt_text', 2000);
        break;
      case 'feedback_buttons':
        if (container !== 'context_actions') {
          this.add(pointer, 'feedback_buttons can only be used in a context_actions block');
          break;
        }
        this.feedbackButton(value.positive_button, `${pointer}/positive_button`, 'positive_button');
        this.feedbackButton(value.negative_button, `${pointer}/negative_button`, 'negative_button');
        break;
      case 'plain_text_input':
        this.text(value.placeholder, `${pointer}/placeholder`, 'placeholder', { max: 150, plainOnly: true });
        break;
      default:
        break;
    }
  }

  elements(value: unknown, pointer: string, what: string, max: number): unknown[] {
    if (!Array.isArray(value)) {
      this.add(pointer, `${what} elements must be an array`);
      return [];
    }
    if (value.length === 0 || value.length > max) {
      this.add(pointer, `${what} block must have 1 to ${max} elements (got ${value.length})`);
    }
    return value;
  }
}

/** A table cell: raw_text with at least one character (@slack/types: "The minimum length is 1 character"), or rich_text. */
function tableCell(c: Checker, cell: unknown, pointer: string): void {
  const t = cell as { type?: unknown; text?: unknown; elements?: unknown };
  if (t === null || typeof t !== 'object') return c.add(pointer, 'table cell must be an object');
  if (t.type === 'rich_text') {
    if (!Array.isArray(t.elements)) c.add(`${pointer}/elements`, 'rich_text cell needs elements');
    return;
  }
  if (t.type !== 'raw_text') return c.add(`${pointer}/type`, `table cell type must be raw_text or rich_text (got ${String(t.type)})`);
  if (typeof t.text !== 'string' || t.text.length === 0) c.add(`${pointer}/text`, 'raw_text cell text must be at least 1 character');
}

/** Characters of a table cell as Slack counts them toward a table's 10,000: its text (rich_text: every text inside). */
function cellChars(cell: unknown): number {
  if (Array.isArray(cell)) return cell.reduce((n: number, item) => n + cellChars(item), 0);
  if (!isObj(cell)) return 0;
  if (typeof cell.text === 'string') return cell.text.length;
  if (typeof cell.value === 'number') return String(cell.value).length;
  return cellChars(cell.elements);
}

/**
 * Slack's data table block (docs: reference/block-kit/blocks/data-table-block): a caption; a header
 * row plus 1-100 rows, every row the same length, 1-20 columns; header cells not rich_text; cells
 * raw_text (at least 1 character), raw_number or rich_text; page_size 1-100; at most 10,000
 * characters over its cells. Returns the characters of its cells.
 */
function dataTable(c: Checker, block: Obj, p: string): number {
  if (typeof block.caption !== 'string' || block.caption.length === 0) c.add(`${p}/caption`, 'data_table caption is required');
  if (block.page_size !== undefined && (!Number.isInteger(block.page_size) || (block.page_size as number) < 1 || (block.page_size as number) > 100)) {
    c.add(`${p}/page_size`, `data_table page_size must be an integer from 1 to 100 (got ${String(block.page_size)})`);
  }
  if (!Array.isArray(block.rows)) {
    c.add(`${p}/rows`, 'data_table rows must be an array');
    return 0;
  }
  if (block.rows.length < 2 || block.rows.length > 101) c.add(`${p}/rows`, `data_table must have a header row and 1 to 100 rows (got ${block.rows.length} rows in all)`);
  const width = Array.isArray(block.rows[0]) ? (block.rows[0] as unknown[]).length : 0;
  if (width < 1 || width > 20) c.add(`${p}/rows/0`, `data_table must have 1 to 20 columns (got ${width})`);
  if (block.row_header_column_index !== undefined && (!Number.isInteger(block.row_header_column_index) || (block.row_header_column_index as number) < 0 || (block.row_header_column_index as number) >= width)) {
    c.add(`${p}/row_header_column_index`, `data_table row_header_column_index must name one of its ${width} columns`);
  }
  let chars = 0;
  block.rows.forEach((row: unknown, j) => {
    if (!Array.isArray(row)) return c.add(`${p}/rows/${j}`, 'data_table row must be an array of cells');
    if (row.length !== width) c.add(`${p}/rows/${j}`, `every data_table row must have the same number of cells (${width}; got ${row.length})`);
    row.forEach((cell: unknown, k) => {
      const pointer = `${p}/rows/${j}/${k}`;
      const t = isObj(cell) ? cell : {};
      chars += cellChars(cell);
      if (t.type === 'rich_text') {
        if (j === 0) c.add(pointer, 'data_table header cells cannot be rich_text');
        else if (!Array.isArray(t.elements)) c.add(`${pointer}/elements`, 'rich_text cell needs elements');
      } else if (t.type === 'raw_number') {
        if (typeof t.value !== 'number' || !Number.isFinite(t.value)) c.add(`${pointer}/value`, 'raw_number cell needs a finite number value');
      } else if (t.type === 'raw_text') {
        if (typeof t.text !== 'string' || t.text.length === 0) c.add(`${pointer}/text`, 'raw_text cell text must be at least 1 character');
      } else c.add(`${pointer}/type`, `data_table cell type must be raw_text, raw_number or rich_text (got ${String(t.type)})`);
    });
  });
  if (chars > 10_000) c.add(`${p}/rows`, `data_table cells must total at most 10000 characters (got ${chars})`);
  return chars;
}

/**
 * Slack's data visualization block (docs: reference/block-kit/blocks/data-visualization-block): a
 * title of at most 50 characters and a pie, bar, area or line chart; bar/area/line: 1-6 series with
 * distinct names whose labels are axis categories (at most 20 characters each), axis labels at most 50.
 */
function dataVisualization(c: Checker, block: Obj, p: string): void {
  if (typeof block.title !== 'string' || block.title.length === 0) c.add(`${p}/title`, 'data_visualization title is required');
  c.maxLength(block.title, `${p}/title`, 'data_visualization title', 50);
  const chart = isObj(block.chart) ? block.chart : undefined;
  if (!chart || !['pie', 'bar', 'area', 'line'].includes(String(chart.type))) return c.add(`${p}/chart`, 'data_visualization chart must be a pie, bar, area or line chart');
  if (chart.type === 'pie') return;
  const axis = isObj(chart.axis_config) ? chart.axis_config : undefined;
  const categories = Array.isArray(axis?.categories) ? (axis.categories as unknown[]) : undefined;
  if (!categories || categories.length === 0) return c.add(`${p}/chart/axis_config/categories`, 'axis_config categories are required');
  categories.forEach((cat, i) => {
    if (typeof cat !== 'string') c.add(`${p}/chart/axis_config/categories/${i}`, 'a category must be a string');
    else c.maxLength(cat, `${p}/chart/axis_config/categories/${i}`, 'category label', 20);
  });
  c.maxLength(axis?.x_label, `${p}/chart/axis_config/x_label`, 'x_label', 50);
  c.maxLength(axis?.y_label, `${p}/chart/axis_config/y_label`, 'y_label', 50);
  const series = Array.isArray(chart.series) ? (chart.series as unknown[]) : [];
  if (series.length < 1 || series.length > 6) c.add(`${p}/chart/series`, `a chart must have 1 to 6 series (got ${series.length})`);
  const names = new Set<string>();
  series.forEach((item, i) => {
    const sp = `${p}/chart/series/${i}`;
    if (!isObj(item) || typeof item.name !== 'string') return c.add(sp, 'a series needs a name');
    if (names.has(item.name)) c.add(`${sp}/name`, `series names must be unique (${item.name})`);
    names.add(item.name);
    if (!Array.isArray(item.data)) return c.add(`${sp}/data`, 'a series needs data');
    item.data.forEach((point: unknown, j) => {
      if (!isObj(point) || typeof point.value !== 'number' || !Number.isFinite(point.value)) c.add(`${sp}/data/${j}`, 'a data point needs a finite value');
      else if (!categories.includes(point.label)) c.add(`${sp}/data/${j}/label`, `a data point's label must be one of the axis categories (got ${String(point.label)})`);
    });
  });
}

const TASK_STATUSES = new Set(['pending', 'in_progress', 'complete', 'error']);

/** A task card's details or output: one rich_text block whose elements are rich text sections, lists, quotes or preformatted text. */
function richTextObject(c: Checker, value: unknown, pointer: string, what: string): void {
  if (value === undefined) return;
  if (!isObj(value) || value.type !== 'rich_text') return c.add(pointer, `${what} must be a rich_text block`);
  if (!Array.isArray(value.elements) || value.elements.length === 0) return c.add(`${pointer}/elements`, `${what} elements must be a non-empty array`);
  value.elements.forEach((el: unknown, i) => {
    const p = `${pointer}/elements/${i}`;
    if (!isObj(el) || !['rich_text_section', 'rich_text_list', 'rich_text_quote', 'rich_text_preformatted'].includes(String(el.type))) {
      return c.add(p, `${what} element must be a rich_text_section, rich_text_list, rich_text_quote or rich_text_preformatted`);
    }
    if (!Array.isArray(el.elements)) return c.add(`${p}/elements`, `${what} ${String(el.type)} needs elements`);
    el.elements.forEach((inline: unknown, j) => {
      const q = `${p}/elements/${j}`;
      if (!isObj(inline) || typeof inline.type !== 'string') return c.add(q, 'rich text element must be an object with a string type');
      if (inline.type === 'text' && typeof inline.text !== 'string') c.add(`${q}/text`, 'rich text text element needs a string text');
      if (inline.type === 'date') {
        if (typeof inline.timestamp !== 'number' || !Number.isInteger(inline.timestamp)) c.add(`${q}/timestamp`, 'date element needs a UNIX timestamp in seconds');
        if (typeof inline.format !== 'string' || inline.format.length === 0) c.add(`${q}/format`, 'date element needs a format');
      }
      if (inline.type === 'link' && typeof inline.url !== 'string') c.add(`${q}/url`, 'link element needs a url');
    });
  });
}

/** A task card (task-card-block reference, @slack/types TaskCardBlock): task_id, title, status, optional rich text and url sources. */
function taskCard(c: Checker, block: Obj, p: string, taskIds: Set<string>): void {
  if (typeof block.task_id !== 'string' || block.task_id.length === 0) c.add(`${p}/task_id`, 'task_card task_id is required');
  else {
    if (taskIds.has(block.task_id)) c.add(`${p}/task_id`, `task_id ${block.task_id} is not unique`);
    taskIds.add(block.task_id);
  }
  if (typeof block.title !== 'string' || block.title.length === 0) c.add(`${p}/title`, 'task_card title is required plain text');
  if (block.status !== undefined && !TASK_STATUSES.has(String(block.status))) {
    c.add(`${p}/status`, `task_card status must be pending, in_progress, complete or error (got ${String(block.status)})`);
  }
  richTextObject(c, block.details, `${p}/details`, 'task_card details');
  richTextObject(c, block.output, `${p}/output`, 'task_card output');
  if (block.sources !== undefined) {
    if (!Array.isArray(block.sources)) c.add(`${p}/sources`, 'task_card sources must be an array');
    else
      block.sources.forEach((source: unknown, i) => {
        if (!isObj(source) || source.type !== 'url' || typeof source.url !== 'string' || typeof source.text !== 'string') {
          c.add(`${p}/sources/${i}`, 'a source must be a url element with a url and a text');
        } else c.maxLength(source.url, `${p}/sources/${i}/url`, 'source url', 3000);
      });
  }
}

/**
 * Checks blocks against the Block Kit limits Slack enforces and returns every problem found
 * (an empty list means Slack would accept them). `basePointer` names the argument, e.g. `/blocks`.
 */
export function validateBlocks(blocks: unknown, surface: BlockSurface, basePointer = '/blocks'): BlockProblem[] {
  const c = new Checker();
  if (!Array.isArray(blocks)) {
    c.add(basePointer, 'blocks must be an array');
    return c.problems;
  }
  const maxBlocks = MAX_BLOCKS[surface];
  if (blocks.length > maxBlocks) {
    c.add(basePointer, `no more than ${maxBlocks} blocks are allowed in a ${surface} (got ${blocks.length})`);
  }
  const blockIds = new Set<string>();
  const taskIds = new Set<string>();
  let markdownChars = 0;
  let tables = 0;
  let charts = 0;
  // Slack's data table doc: all table cells of one message total at most 10,000 characters (table blocks counted too).
  let tableCellChars = 0;
  blocks.forEach((block: unknown, i) => {
    const p = `${basePointer}/${i}`;
    if (!isObj(block) || typeof block.type !== 'string') {
      c.add(p, 'block must be an object with a string type');
      return;
    }
    if (block.block_id !== undefined) {
      if (typeof block.block_id !== 'string') c.add(`${p}/block_id`, 'block_id must be a string');
      else {
        c.maxLength(block.block_id, `${p}/block_id`, 'block_id', 255);
        if (blockIds.has(block.block_id)) c.add(`${p}/block_id`, `block_id ${block.block_id} is not unique`);
        blockIds.add(block.block_id);
      }
    }
    const actionIds = new Set<string>();
    switch (block.type) {
      case 'section': {
        if (block.text === undefined && block.fields === undefined) {
          c.add(p, 'section block needs text or fields');
        }
        c.text(block.text, `${p}/text`, 'section text', { max: 3000 });
        if (block.fields !== undefined) {
          if (!Array.isArray(block.fields)) c.add(`${p}/fields`, 'fields must be an array');
          else {
            if (block.fields.length > 10) {
              c.add(`${p}/fields`, `section fields must have at most 10 items (got ${block.fields.length})`);
            }
            block.fields.forEach((field: unknown, j) =>
              c.text(field, `${p}/fields/${j}`, 'section field', { max: 2000, required: true }),
            );
          }
        }
        if (block.accessory !== undefined) c.element(block.accessory, `${p}/accessory`, actionIds);
        break;
      }
      case 'header':
        c.text(block.text, `${p}/text`, 'header text', { max: 150, required: true, plainOnly: true });
        break;
      case 'actions':
        c.elements(block.elements, `${p}/elements`, 'actions', 25).forEach((el, j) =>
          c.element(el, `${p}/elements/${j}`, actionIds),
        );
        break;
      case 'context':
        c.elements(block.elements, `${p}/elements`, 'context', 10).forEach((el, j) => {
          if (isObj(el) && (el.type === 'plain_text' || el.type === 'mrkdwn')) {
            c.text(el, `${p}/elements/${j}`, 'context text', { max: 3000 });
          } else c.element(el, `${p}/elements/${j}`, actionIds);
        });
        break;
      case 'context_actions':
        c.elements(block.elements, `${p}/elements`, 'context_actions', 5).forEach((el, j) =>
          c.contextActionsElement(el, `${p}/elements/${j}`, actionIds),
        );
        break;
      case 'image':
        if (block.image_url === undefined && block.slack_file === undefined) c.add(p, 'image block needs image_url or slack_file');
        c.maxLength(block.image_url, `${p}/image_url`, 'image_url', 3000);
        if (typeof block.alt_text !== 'string') c.add(`${p}/alt_text`, 'image alt_text is required');
        c.maxLength(block.alt_text, `${p}/alt_text`, 'alt_text', 2000);
        c.text(block.title, `${p}/title`, 'image title', { max: 2000, plainOnly: true });
        break;
      case 'input':
        c.text(block.label, `${p}/label`, 'input label', { max: 2000, required: true, plainOnly: true });
        c.text(block.hint, `${p}/hint`, 'input hint', { max: 2000, plainOnly: true });
        if (block.element === undefined) c.add(`${p}/element`, 'input block needs an element');
        else c.element(block.element, `${p}/element`, actionIds);
        break;
      case 'markdown':
        if (typeof block.text !== 'string') c.add(`${p}/text`, 'markdown block needs a string text');
        else markdownChars += block.text.length;
        break;
      case 'table': {
        tables += 1;
        if (!Array.isArray(block.rows) || block.rows.length === 0) {
          c.add(`${p}/rows`, 'table rows must be a non-empty array');
          break;
        }
        if (block.rows.length > 100) c.add(`${p}/rows`, `table must have at most 100 rows (got ${block.rows.length})`);
        block.rows.forEach((row: unknown, j) => {
          if (!Array.isArray(row)) c.add(`${p}/rows/${j}`, 'table row must be an array of cells');
          else if (row.length > 20) c.add(`${p}/rows/${j}`, `table row must have at most 20 cells (got ${row.length})`);
          else
            row.forEach((cell: unknown, k) => {
              tableCell(c, cell, `${p}/rows/${j}/${k}`);
              tableCellChars += cellChars(cell);
            });
        });
        if (Array.isArray(block.column_settings) && block.column_settings.length > 20) {
          c.add(`${p}/column_settings`, `table column_settings must have at most 20 items (got ${block.column_settings.length})`);
        }
        break;
      }
      case 'data_table':
        tableCellChars += dataTable(c, block, p);
        break;
      case 'data_visualization':
        charts += 1;
        dataVisualization(c, block, p);
        break;
      case 'task_card':
        taskCard(c, block, p, taskIds);
        break;
      case 'plan': {
        if (typeof block.title !== 'string' || block.title.length === 0) c.add(`${p}/title`, 'plan title is required plain text');
        if (block.tasks !== undefined) {
          if (!Array.isArray(block.tasks)) c.add(`${p}/tasks`, 'plan tasks must be an array of task_card blocks');
          else
            block.tasks.forEach((task: unknown, j) => {
              if (!isObj(task) || task.type !== 'task_card') c.add(`${p}/tasks/${j}`, 'plan tasks must be task_card blocks');
              else taskCard(c, task, `${p}/tasks/${j}`, taskIds);
            });
        }
        break;
      }
      default:
        break;
    }
  });
  if (charts > 2) c.add(basePointer, `at most two data_visualization blocks are allowed per message (got ${charts})`);
  if (surface === 'message' && tableCellChars > 10_000) {
    c.add(basePointer, `table cells of one message must total at most 10000 characters (got ${tableCellChars})`);
  }
  if (markdownChars > 12_000) {
    c.add(basePointer, `markdown blocks must total at most 12000 characters (got ${markdownChars})`);
  }
  if (surface === 'message' && tables > 1) {
    c.add(basePointer, `only one table block is allowed per message (got ${tables})`);
  }
  return c.problems;
}

/** Checks a Home tab view payload: its blocks plus the view-level field limits. */
export function validateView(view: unknown, surface: 'home'): BlockProblem[] {
  if (!isObj(view)) return [{ pointer: '/view', message: 'view must be an object' }];
  const c = new Checker();
  if (view.type !== surface) c.add('/view/type', `view type must be ${surface} (got ${String(view.type)})`);
  c.maxLength(view.private_metadata, '/view/private_metadata', 'private_metadata', 3000);
  c.maxLength(view.callback_id, '/view/callback_id', 'callback_id', 255);
  c.maxLength(view.external_id, '/view/external_id', 'external_id', 255);
  return [...c.problems, ...validateBlocks(view.blocks ?? [], surface, '/view/blocks')];
}

/**
 * The block and element types in blocks (nested elements included), for a fake workspace told to
 * refuse some of them as a Slack that does not take them yet would.
 */
export function blockTypesIn(blocks: readonly unknown[]): Set<string> {
  const types = new Set<string>();
  for (const block of blocks) {
    if (!isObj(block)) continue;
    if (typeof block.type === 'string') types.add(block.type);
    const elements = Array.isArray(block.elements) ? block.elements : [];
    for (const el of [...elements, block.accessory, block.element]) {
      if (isObj(el) && typeof el.type === 'string') types.add(el.type);
    }
  }
  return types;
}
