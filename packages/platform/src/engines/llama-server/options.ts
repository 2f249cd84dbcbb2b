// The embedded inference server's options and public shapes, shared by its parts.
import type { Token } from 'node-llama-cpp';
import type { ChatMessage } from '../chat-form.js';

export interface LlamaServerLogger {
  debug?(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface LlamaServerOptions {
  modelsDir: string;
  /** CPU threads per evaluation; set explicitly (node-llama-cpp's default was far slower here). */
  threads: number;
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Tokens per sequence; default: the model's training context, at most 4096. */
  contextSize?: number;
  /** Requests generating at once (sequences per context); further requests wait in a bounded queue. */
  parallel?: number;
  /** Requests allowed to wait for a slot before the server answers 503. */
  maxQueue?: number;
  logger?: LlamaServerLogger;
  /**
   * Told, after each generation, the tokens its sequence evaluated (the prompt, then the generated
   * tokens fed back) and the tokens it generated: what the model really read, for checks and diagnostics.
   */
  onEvaluated?(evaluation: Evaluation): void;
}

/** What one generation evaluated, as {@link LlamaServerOptions.onEvaluated} is told. */
export interface Evaluation {
  /** The request's `model` (a base model's id or an adapter's name). */
  model: string;
  route: '/v1/completions' | '/v1/chat/completions';
  /** What was asked: a completion's prompt, or a chat request's messages. */
  input: string | ChatMessage[];
  /** The sequence's tokens once the generation ended: the prompt's, then generated ones. */
  evaluated: Token[];
  generated: Token[];
}

export interface LlamaServer {
  /** Base URL, e.g. http://127.0.0.1:PORT; OpenAI routes are under /v1. */
  url: string;
  /** The engine as messages name it, e.g. "llama.cpp, CPU, 2 threads". */
  label: string;
  close(): Promise<void>;
}
