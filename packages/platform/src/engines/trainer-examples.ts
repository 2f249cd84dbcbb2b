// A training dataset's examples: read from its JSONL file, and tokenized exactly as inference fed their prompts (completion or chat form).
import type { JinjaTemplateChatWrapper, LlamaModel, Token } from 'node-llama-cpp';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { chatExampleTokens, chatTemplateOf, chatWrapperFor } from './chat-form.js';
import type { TrainingExample } from './trainer.js';

const exampleSchema = z.object({ prompt: z.string(), completion: z.string().min(1), style: z.enum(['chat', 'completion']).optional() });

export interface TokenizedExample {
  prompt: Token[];
  completion: Token[];
}

/**
 * The prompt's tokens as a completion endpoint on node-llama-cpp feeds them (`LlamaCompletion`): the BOS
 * token when the model wants one, then the text without an added leading space.
 */
export function completionPromptTokens(model: LlamaModel, prompt: string): Token[] {
  const bos = model.tokens.shouldPrependBosToken ? model.tokens.bos : null;
  const text = model.tokenize(prompt, false, bos != null ? 'trimLeadingSpace' : undefined);
  return bos != null ? [bos, ...text] : text;
}

/**
 * Prompt tokens exactly as inference sends them, and completion tokens that continue them: the tail of
 * tokenizing prompt+completion together when the prompt's tokens are its prefix (the natural
 * tokenization), else the completion tokenized on its own (the prompt cannot change at inference).
 */
export function tokenizeExample(model: LlamaModel, example: TrainingExample): TokenizedExample {
  const prompt = completionPromptTokens(model, example.prompt);
  const joint = completionPromptTokens(model, example.prompt + example.completion);
  const isPrefix = joint.length > prompt.length && prompt.every((token, i) => joint[i] === token);
  const completion = isPrefix ? joint.slice(prompt.length) : model.tokenize(example.completion, false, 'trimLeadingSpace');
  return { prompt, completion };
}

/** A dataset the base model cannot be trained on in the form its runs asked (said in the user's words). */
export class ChatFormError extends Error {}

/**
 * Every example tokenized as its run asked it (see {@link TrainingExample.style}): in chat form
 * through the GGUF's own chat template, the way the embedded server renders a chat request
 * ({@link chatExampleTokens}); in completion form as {@link tokenizeExample}. Throws a
 * {@link ChatFormError} for a chat-form example on a model whose GGUF has no chat template.
 */
export function tokenizeExamples(model: LlamaModel, examples: readonly TrainingExample[]): TokenizedExample[] {
  const template = chatTemplateOf(model.fileInfo.metadata);
  let wrapper: JinjaTemplateChatWrapper | undefined;
  return examples.map((example) => {
    const style = example.style ?? (template ? 'chat' : 'completion');
    if (style === 'completion') return tokenizeExample(model, example);
    if (!template) {
      throw new ChatFormError(
        'its runs asked the questions as chat (/v1/chat/completions), but the base model\'s GGUF has no chat template (tokenizer.chat_template) ' +
          'to render them the same way for training; use a GGUF that carries its chat template, or set INFERENCE_PROMPT_STYLE=completion and run the benchmark again',
      );
    }
    wrapper ??= chatWrapperFor(template);
    return chatExampleTokens(model, wrapper, example.prompt, example.completion.trim());
  });
}

/** The dataset file's examples, or why it cannot be trained on (in the user's words). */
export async function readExamples(datasetPath: string): Promise<{ ok: true; examples: TrainingExample[] } | { ok: false; message: string }> {
  let text: string;
  try {
    text = await readFile(datasetPath, 'utf8');
  } catch (error) {
    return { ok: false, message: `the training dataset could not be read: ${(error as Error).message}` };
  }
  const examples: TrainingExample[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      return { ok: false, message: `training dataset line ${i + 1} is not JSON` };
    }
    const result = exampleSchema.safeParse(parsed);
    if (!result.success) {
      return { ok: false, message: `training dataset line ${i + 1} needs a string "prompt" and a non-empty string "completion"` };
    }
    examples.push(result.data);
  }
  if (examples.length === 0) return { ok: false, message: 'the training dataset has no examples' };
  return { ok: true, examples };
}
