// The embedded server's OpenAI routes: completions, chat completions, models, tokenize, and loading or unloading a LoRA adapter.
import { LlamaChat, LlamaCompletion } from 'node-llama-cpp';
import { resolve } from 'node:path';
import { chatHistoryOf, chatWrapperFor, type ChatMessage } from '../chat-form.js';
import { budget, stopWatch, type SequencePool } from './generation.js';
import type { LlamaServerOptions } from './options.js';
import type { AdapterEntry, GgufEntry, ModelRegistry } from './registry.js';
import { ApiError, ChatRequest, CompletionRequest, LoadLoraRequest, TokenizeRequest, UnloadLoraRequest, invalid, parse } from './requests.js';

export interface HandlerOptions {
  registry: ModelRegistry;
  pool: SequencePool;
  /** Aborted on close: generations under way stop, so nothing runs on a disposed model. */
  shutdown: AbortController;
  onEvaluated?: LlamaServerOptions['onEvaluated'];
  logger?: LlamaServerOptions['logger'];
}

/** Each handler parses its body, answers an object (JSON) or a string (text), or throws an {@link ApiError}. */
export function createHandlers(options: HandlerOptions) {
  const { registry, pool, shutdown, onEvaluated, logger } = options;

  async function completions(body: unknown): Promise<object> {
    const request = parse(CompletionRequest, body);
    const prompt = Array.isArray(request.prompt) ? request.prompt[0]! : request.prompt;
    const { base, adapter } = await registry.resolveModel(request.model);
    return pool.withSequence(base, adapter, async (context, model) => {
      const promptTokens = model.tokenize(prompt, false).length + (model.tokens.bos !== null && model.tokens.shouldPrependBosToken ? 1 : 0);
      const maxTokens = budget(promptTokens, request.max_tokens, context.contextSize);
      const sequence = context.getSequence();
      try {
        const completion = new LlamaCompletion({ contextSequence: sequence });
        const watch = stopWatch(request.stop, shutdown);
        const meta = await completion
          .generateCompletionWithMeta(prompt, {
            maxTokens,
            temperature: request.temperature ?? 1,
            ...(request.top_p != null ? { topP: request.top_p } : {}),
            ...(request.seed != null ? { seed: request.seed } : {}),
            ...watch.options,
          })
          .finally(() => watch.release());
        const { text, finish, generated } = watch.result(meta.response, meta.metadata.stopReason);
        onEvaluated?.({ model: request.model, route: '/v1/completions', input: prompt, evaluated: [...sequence.contextTokens], generated: watch.tokens() });
        return {
          id: `cmpl-${crypto.randomUUID()}`,
          object: 'text_completion',
          created: Math.floor(Date.now() / 1000),
          model: request.model,
          choices: [{ index: 0, text, logprobs: null, finish_reason: finish }],
          usage: { prompt_tokens: promptTokens, completion_tokens: generated, total_tokens: promptTokens + generated },
        };
      } finally {
        await sequence.dispose();
      }
    });
  }

  async function chatCompletions(body: unknown): Promise<object> {
    const request = parse(ChatRequest, body);
    const { base, adapter } = await registry.resolveModel(request.model);
    if (!base.chatTemplate) {
      throw invalid(
        `The model \`${request.model}\` has no chat template (its GGUF has no tokenizer.chat_template); send it plain prompts on /v1/completions instead.`,
        'no_chat_template',
      );
    }
    const template = base.chatTemplate;
    const messages: ChatMessage[] = request.messages.map((message) => ({
      role: message.role,
      text: typeof message.content === 'string' ? message.content : message.content.map((part) => part.text).join(''),
    }));
    const history = chatHistoryOf(messages);
    return pool.withSequence(base, adapter, async (context) => {
      const sequence = context.getSequence();
      try {
        const chat = new LlamaChat({ contextSequence: sequence, chatWrapper: chatWrapperFor(template) });
        const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? undefined;
        const watch = stopWatch(request.stop, shutdown);
        const meta = await chat
          .generateResponse(history, {
            ...(maxTokens != null ? { maxTokens } : {}),
            temperature: request.temperature ?? 1,
            ...(request.top_p != null ? { topP: request.top_p } : {}),
            ...(request.seed != null ? { seed: request.seed } : {}),
            ...watch.options,
          })
          .finally(() => watch.release());
        const { text, finish, generated } = watch.result(meta.response, meta.metadata.stopReason);
        onEvaluated?.({ model: request.model, route: '/v1/chat/completions', input: messages, evaluated: [...sequence.contextTokens], generated: watch.tokens() });
        const used = sequence.tokenMeter.getState();
        const promptTokens = Math.max(0, used.usedInputTokens - Math.max(0, generated - 1));
        return {
          id: `chatcmpl-${crypto.randomUUID()}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: request.model,
          choices: [{ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finish }],
          usage: { prompt_tokens: promptTokens, completion_tokens: generated, total_tokens: promptTokens + generated },
        };
      } finally {
        await sequence.dispose();
      }
    });
  }

  async function listModels(): Promise<object> {
    const bases = await registry.scan();
    const created = (entry: GgufEntry) => Math.floor(entry.mtimeMs / 1000);
    const data: object[] = [...bases.values()].map((entry) => ({
      id: entry.id,
      object: 'model',
      created: created(entry),
      owned_by: 'llama.cpp',
      root: entry.id,
      parent: null,
      max_model_len: registry.sequenceSize(entry),
      chat_template: entry.chatTemplate !== undefined,
    }));
    for (const adapter of registry.adapters.values()) {
      const base = bases.get(adapter.base);
      if (!base) continue;
      data.push({
        id: adapter.name,
        object: 'model',
        created: adapter.created,
        owned_by: 'llama.cpp',
        root: adapter.path,
        parent: adapter.base,
        max_model_len: registry.sequenceSize(base),
        chat_template: base.chatTemplate !== undefined,
      });
    }
    return { object: 'list', data };
  }

  async function tokenize(body: unknown): Promise<object> {
    const request = parse(TokenizeRequest, body);
    const { base } = await registry.resolveModel(request.model);
    const model = await registry.loadModel(base);
    const special = request.add_special_tokens ?? true;
    const tokens = [...model.tokenize(request.prompt, false)];
    if (special && model.tokens.bos !== null && model.tokens.shouldPrependBosToken) tokens.unshift(model.tokens.bos);
    return { count: tokens.length, max_model_len: registry.sequenceSize(base), tokens };
  }

  async function loadLora(body: unknown): Promise<string> {
    const request = parse(LoadLoraRequest, body);
    const path = resolve(request.lora_path);
    const bases = await registry.scan();
    if (bases.has(request.lora_name)) throw invalid(`The name \`${request.lora_name}\` is already a base model's id; choose another lora_name.`);
    let baseId = request.base_model;
    if (baseId === undefined) {
      if (bases.size !== 1) throw invalid(`base_model is required: ${bases.size} base models are served (${[...bases.keys()].join(', ') || 'none'}).`);
      baseId = [...bases.keys()][0]!;
    }
    const base = bases.get(baseId);
    if (!base) throw new ApiError(404, 'invalid_request_error', 'model_not_found', `The base model \`${baseId}\` does not exist.`);
    const existing = registry.adapters.get(request.lora_name);
    if (existing) {
      if (existing.path === path && existing.base === baseId) return `Success: LoRA adapter '${request.lora_name}' is already loaded.`;
      throw invalid(`The lora adapter '${request.lora_name}' has already been loaded from ${existing.path} on ${existing.base}; unload it first.`, 'lora_already_loaded');
    }
    let info: GgufEntry;
    try {
      info = await registry.inspect(path);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw invalid(`lora_path ${request.lora_path} cannot be read: ${(err as Error).message}`, 'invalid_lora_path');
    }
    if (!info.isAdapter) throw invalid(`lora_path ${request.lora_path} is a GGUF model, not a LoRA adapter (general.type is not "adapter").`, 'invalid_lora_path');
    const adapter: AdapterEntry = { name: request.lora_name, path, base: baseId, created: Math.floor(Date.now() / 1000) };
    registry.adapters.set(adapter.name, adapter);
    try {
      await registry.getContext(base, adapter);
    } catch (err) {
      registry.adapters.delete(adapter.name);
      await registry.dropContext(adapter.name);
      throw invalid(`The adapter ${request.lora_path} cannot be applied to \`${baseId}\`: ${(err as Error).message}`, 'invalid_lora_adapter');
    }
    logger?.info({ lora: adapter.name, base: baseId, path }, 'LoRA adapter loaded');
    return `Success: LoRA adapter '${request.lora_name}' added successfully.`;
  }

  async function unloadLora(body: unknown): Promise<string> {
    const request = parse(UnloadLoraRequest, body);
    if (!registry.adapters.has(request.lora_name)) throw new ApiError(404, 'invalid_request_error', 'lora_not_found', `The lora adapter '${request.lora_name}' cannot be found.`);
    registry.adapters.delete(request.lora_name);
    await registry.dropContext(request.lora_name);
    return `Success: LoRA adapter '${request.lora_name}' removed successfully.`;
  }

  return { completions, chatCompletions, listModels, tokenize, loadLora, unloadLora };
}
