// The chat form of a question: one rendering through the GGUF's own chat template, used by the embedded server to answer and by the trainers to train.
import { JinjaTemplateChatWrapper, SpecialToken, SpecialTokensText, type ChatHistoryItem, type LlamaModel, type LlamaText, type Token } from 'node-llama-cpp';

/** A chat message as an OpenAI-style request carries it, its content already joined into text. */
export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant';
  text: string;
}

/** The chat template a GGUF carries (`tokenizer.chat_template`), or undefined when it has none (a completion model). */
export function chatTemplateOf(metadata: unknown): string | undefined {
  const template = (metadata as { tokenizer?: { chat_template?: unknown } } | undefined)?.tokenizer?.chat_template;
  return typeof template === 'string' && template !== '' ? template : undefined;
}

/**
 * The chat wrapper that renders `template`. The embedded server answers with it and the trainers
 * train with it: constructed here only, with the same options, so the two cannot render differently.
 */
export function chatWrapperFor(template: string): JinjaTemplateChatWrapper {
  return new JinjaTemplateChatWrapper({ template });
}

/**
 * The chat history a request's messages make, ending with the model's turn: empty (`response`
 * unset) for a generation, where the model writes from the start of its turn, or holding the
 * answer for a training example.
 */
export function chatHistoryOf(messages: readonly ChatMessage[], response?: string): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = messages.map((message) => {
    if (message.role === 'assistant') return { type: 'model', response: [message.text] };
    if (message.role === 'user') return { type: 'user', text: message.text };
    return { type: 'system', text: message.text };
  });
  history.push({ type: 'model', response: response === undefined ? [] : [response] });
  return history;
}

/**
 * The tokens a model evaluates for `history` before it writes: the wrapper's context text
 * tokenized with the model's tokenizer, as node-llama-cpp's LlamaChat does on a fresh sequence.
 */
export function chatContextTokens(model: LlamaModel, wrapper: JinjaTemplateChatWrapper, history: ChatHistoryItem[]): Token[] {
  return wrapper.generateContextState({ chatHistory: history }).contextText.tokenize(model.tokenizer);
}

/**
 * What the template writes after an assistant's answer, as text and special tokens (as
 * node-llama-cpp's stop detection reads a stop trigger): the trigger other than the lone
 * end-of-sequence token, or that token when the template writes nothing else after an answer.
 */
function turnEnd(model: LlamaModel, triggers: readonly LlamaText[]): Array<string | Token> {
  for (const trigger of triggers) {
    const parts = trigger.values.flatMap((value): Array<string | Token> => {
      if (typeof value === 'string') return [value];
      if (value instanceof SpecialToken) return value.tokenize(model.tokenizer);
      if (value instanceof SpecialTokensText) return value.tokenizeSpecialTokensOnly(model.tokenizer);
      return [];
    });
    const loneEos = parts.length === 1 && parts[0] === model.tokens.eos;
    if (parts.length > 0 && !loneEos) return parts;
  }
  if (model.tokens.eos === null) throw new Error('the chat template writes nothing after an answer and the model has no end-of-sequence token: the end of a turn cannot be trained');
  return [model.tokens.eos];
}

/**
 * The answer, then the end of the turn up to and including its first end-of-generation token (the
 * model stops there), its text tokenized as the model would write it: one text with the answer
 * (a newline after "park" is the newline token, not the template's separately tokenized "\n").
 */
function answerTokens(model: LlamaModel, answer: string, end: ReadonlyArray<string | Token>): Token[] {
  const tokens: Token[] = [];
  let text = answer;
  const flush = () => {
    if (text !== '') tokens.push(...model.tokenize(text, false, 'trimLeadingSpace'));
    text = '';
  };
  for (const part of end) {
    if (typeof part === 'string') {
      text += part;
      continue;
    }
    flush();
    tokens.push(part);
    if (model.isEogToken(part)) return tokens;
  }
  flush();
  return tokens;
}

/**
 * A training example in chat form: `prompt` = the tokens the engine evaluates for `question` as
 * one user message (see {@link chatContextTokens}); `completion` = what the template writes in the
 * assistant's turn before the answer (if anything), the answer, then the end of the turn, so the
 * model learns to stop.
 */
export function chatExampleTokens(
  model: LlamaModel,
  wrapper: JinjaTemplateChatWrapper,
  question: string,
  answer: string,
): { prompt: Token[]; completion: Token[] } {
  const turn: ChatMessage[] = [{ role: 'user', text: question }];
  const prompt = chatContextTokens(model, wrapper, chatHistoryOf(turn));
  const answered = wrapper.generateContextState({ chatHistory: chatHistoryOf(turn, answer) });
  const joint = answered.contextText.tokenize(model.tokenizer);
  const own = model.tokenize(answer, false, 'trimLeadingSpace');
  const isPrefix = joint.length >= prompt.length + own.length && prompt.every((token, i) => joint[i] === token);
  const endsWithAnswer = own.every((token, i) => joint[joint.length - own.length + i] === token);
  // A template that opens a finished turn otherwise than an open one (the prompt is not a prefix) adds nothing before the answer.
  const lead = isPrefix && endsWithAnswer ? joint.slice(prompt.length, joint.length - own.length) : [];
  return { prompt, completion: [...lead, ...answerTokens(model, answer, turnEnd(model, answered.stopGenerationTriggers))] };
}
