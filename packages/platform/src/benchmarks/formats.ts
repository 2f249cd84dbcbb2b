// The benchmark formats people already have (OpenAI evals, Inspect AI, Hugging Face rows of MMLU, ARC, GSM8K), detected per file and read into ours.

/** A format a benchmark file can be read as. */
export type BenchmarkFormatId = 'ours' | 'openai_evals' | 'inspect' | 'mmlu' | 'arc' | 'gsm8k';

/** How a file was read: named in the import report ("read as OpenAI evals: input -> question, ideal -> answer"). */
export interface BenchmarkFormatReport {
  id: BenchmarkFormatId;
  /** e.g. "OpenAI evals". */
  name: string;
  /** Their fields to ours, e.g. ["input -> question", "ideal -> answer"]. */
  mapping: string[];
}

export const FORMAT_NAMES: Record<BenchmarkFormatId, string> = {
  ours: 'our benchmark format',
  openai_evals: 'OpenAI evals',
  inspect: 'Inspect AI',
  mmlu: 'MMLU (Hugging Face rows)',
  arc: 'ARC (Hugging Face rows)',
  gsm8k: 'GSM8K (Hugging Face rows)',
};

const MAPPINGS: Record<BenchmarkFormatId, string[]> = {
  ours: [],
  openai_evals: ['input -> question (chat messages joined)', 'ideal -> answer (a list: accepted answers)', 'scorer exact'],
  inspect: ['input -> question (chat messages joined)', 'target -> answer (a list: accepted answers)', 'choices -> choices', 'id -> id', 'metadata.category or metadata.subject -> category'],
  mmlu: ['question -> question', 'choices -> choices', 'answer (index) -> answer letter', 'subject -> category'],
  arc: ['id -> id', 'question -> question', 'choices.text -> choices', 'answerKey (by choices.label) -> answer letter'],
  gsm8k: ['question -> question', 'answer after "####" -> answer', 'scorer numeric ("," and "$" ignored)', 'stop "Question:"', 'max_tokens 256'],
};

/** The report of a format, as the import names it. */
export function formatReport(id: BenchmarkFormatId): BenchmarkFormatReport {
  return { id, name: FORMAT_NAMES[id], mapping: MAPPINGS[id] };
}

/** "read as OpenAI evals: input -> question, ideal -> answer". */
export function describeFormat(report: BenchmarkFormatReport): string {
  return report.mapping.length === 0 ? `read as ${report.name}` : `read as ${report.name}: ${report.mapping.join(', ')}`;
}

/** GSM8K's generation settings, as lm-evaluation-harness's task sets them (`until`, `max_gen_toks`). */
export const GSM8K_STOP = ['Question:'];
export const GSM8K_MAX_TOKENS = 256;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const has = (record: Record<string, unknown>, key: string) => record[key] !== undefined;

/**
 * The format of a file from its first JSON object: the fields that only that format has.
 * A line of ours always has `id`, `question` and `answer`; Hugging Face rows have no `id` (ARC has
 * one, with `answerKey`).
 */
export function detectFormat(first: Record<string, unknown>): BenchmarkFormatId {
  if (has(first, 'input') && has(first, 'ideal')) return 'openai_evals';
  if (has(first, 'input') && has(first, 'target')) return 'inspect';
  if (has(first, 'question') && has(first, 'answerKey') && isObject(first.choices)) return 'arc';
  if (!has(first, 'id') && has(first, 'question') && Array.isArray(first.choices) && (typeof first.answer === 'number' || has(first, 'subject'))) return 'mmlu';
  if (!has(first, 'id') && typeof first.question === 'string' && typeof first.answer === 'string' && /####/.test(first.answer)) return 'gsm8k';
  return 'ours';
}

/** One line read in a foreign format: the record in our fields, and which of their fields each of ours came from. */
export interface ConvertedLine {
  record: Record<string, unknown>;
  /** Our field -> theirs, so that a problem is named by the field the person wrote. */
  fields: Record<string, string>;
}

export interface LineProblem {
  field?: string;
  message: string;
}

/** Chat messages as one prompt: each message's text, system and user turns alike, separated by a blank line. */
function messagesText(value: unknown, field: string, problems: LineProblem[]): string | undefined {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) {
    problems.push({ field, message: 'must be a string or a list of chat messages ({"role", "content"})' });
    return undefined;
  }
  const parts: string[] = [];
  for (const [index, message] of value.entries()) {
    if (!isObject(message) || typeof message.role !== 'string') {
      problems.push({ field: `${field}[${index}]`, message: 'must be a chat message with a role and a content' });
      return undefined;
    }
    const content = message.content;
    if (typeof content === 'string') parts.push(content);
    else if (Array.isArray(content)) {
      // Content parts (OpenAI and Inspect): the text ones.
      const texts = content.filter((p): p is { text: string } => isObject(p) && typeof p.text === 'string').map((p) => p.text);
      if (texts.length === 0) {
        problems.push({ field: `${field}[${index}].content`, message: 'has no text part' });
        return undefined;
      }
      parts.push(texts.join('\n'));
    } else {
      problems.push({ field: `${field}[${index}].content`, message: 'must be a string or a list of content parts' });
      return undefined;
    }
  }
  if (parts.length === 0) problems.push({ field, message: 'has no messages' });
  return parts.join('\n\n');
}

function category(metadata: unknown): string | undefined {
  if (!isObject(metadata)) return undefined;
  for (const key of ['category', 'subject']) if (typeof metadata[key] === 'string' && metadata[key] !== '') return metadata[key];
  return undefined;
}

/** The number after GSM8K's "####", with "," and "$" dropped; null when there is none. */
export function gsm8kAnswer(answer: string): string | null {
  const match = /####\s*(.+?)\s*$/s.exec(answer);
  if (!match) return null;
  const cleaned = match[1]!.replace(/[,$]/g, '').replace(/\.$/, '').trim();
  return /^[-+]?(\d+\.?\d*|\.\d+)$/.test(cleaned) ? cleaned : null;
}

/**
 * Reads one JSON object of a file in `format` into our fields; `question` is the 1-based number of
 * the question (lines without an id get `q<number>`). Problems that only the foreign shape can
 * have are pushed; the rest is checked by our validation on the result.
 */
export function convertLine(format: Exclude<BenchmarkFormatId, 'ours'>, value: Record<string, unknown>, question: number, problems: LineProblem[]): ConvertedLine | null {
  const before = problems.length;
  const id = value.id ?? `q${question}`;
  switch (format) {
    case 'openai_evals': {
      const text = messagesText(value.input, 'input', problems);
      if (value.ideal === undefined) problems.push({ field: 'ideal', message: 'is required' });
      if (problems.length > before) return null;
      return { record: { id, question: text, answer: value.ideal, scorer: 'exact' }, fields: { question: 'input', answer: 'ideal' } };
    }
    case 'inspect': {
      const text = messagesText(value.input, 'input', problems);
      if (value.target === undefined) problems.push({ field: 'target', message: 'is required' });
      if (problems.length > before) return null;
      const record: Record<string, unknown> = { id, question: text, answer: value.target };
      if (value.choices !== undefined && value.choices !== null) record.choices = value.choices;
      const cat = category(value.metadata);
      if (cat) record.category = cat;
      return { record, fields: { question: 'input', answer: 'target' } };
    }
    case 'mmlu': {
      const choices = value.choices;
      let answer: unknown = value.answer;
      if (typeof answer === 'number') {
        if (!Number.isInteger(answer) || !Array.isArray(choices) || answer < 0 || answer >= choices.length) {
          problems.push({ field: 'answer', message: `must be the index of a choice (0 to ${Array.isArray(choices) ? choices.length - 1 : '?'}), got ${JSON.stringify(answer)}` });
          return null;
        }
        answer = String.fromCharCode(65 + answer);
      }
      const record: Record<string, unknown> = { id, question: value.question, answer, choices };
      if (typeof value.subject === 'string' && value.subject !== '') record.category = value.subject;
      return { record, fields: {} };
    }
    case 'arc': {
      const choices = value.choices;
      if (!isObject(choices) || !Array.isArray(choices.text) || !Array.isArray(choices.label) || choices.text.length !== choices.label.length) {
        problems.push({ field: 'choices', message: 'must be {"text": [...], "label": [...]} with as many labels as texts' });
        return null;
      }
      const index = choices.label.findIndex((label) => String(label) === String(value.answerKey));
      if (index < 0) {
        problems.push({ field: 'answerKey', message: `${JSON.stringify(value.answerKey)} is not one of the labels ${JSON.stringify(choices.label)}` });
        return null;
      }
      return { record: { id, question: value.question, answer: String.fromCharCode(65 + index), choices: choices.text }, fields: { answer: 'answerKey', choices: 'choices.text' } };
    }
    case 'gsm8k': {
      if (typeof value.answer !== 'string') {
        problems.push({ field: 'answer', message: 'must be the worked solution ending in "#### <number>"' });
        return null;
      }
      const number = gsm8kAnswer(value.answer);
      if (number === null) {
        problems.push({ field: 'answer', message: `does not end in "#### <number>": ${JSON.stringify(value.answer.slice(-60))}` });
        return null;
      }
      return {
        record: { id, question: value.question, answer: number, scorer: 'numeric', stop: GSM8K_STOP, max_tokens: GSM8K_MAX_TOKENS },
        fields: {},
      };
    }
  }
}
