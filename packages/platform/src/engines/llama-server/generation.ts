// Generating on the embedded server: a bounded pool of sequences per served model, the token budget, and OpenAI's stop strings.
import type { LlamaContext, LlamaModel, Token } from 'node-llama-cpp';
import type { z } from 'zod';
import type { LlamaServerLogger } from './options.js';
import type { AdapterEntry, GgufEntry, ModelRegistry } from './registry.js';
import { ApiError, invalid, type stopSchema } from './requests.js';

/** A counting semaphore whose waiting line is bounded: past it a request is refused with 503. */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(
    size: number,
    private readonly maxQueue: number,
  ) {
    this.free = size;
  }
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return;
    }
    if (this.waiting.length >= this.maxQueue) throw new ApiError(503, 'server_error', 'overloaded', 'the server is busy: too many requests are waiting; retry later');
    await new Promise<void>((resolveWait) => this.waiting.push(resolveWait));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free += 1;
  }
}

export interface SequencePoolOptions {
  registry: ModelRegistry;
  /** Requests generating at once. */
  parallel: number;
  /** Requests allowed to wait for a slot before the server answers 503. */
  maxQueue: number;
  /** True once the server is closing: no new generation starts. */
  closed(): boolean;
  logger?: LlamaServerLogger | undefined;
}

/** Runs generations within the server's slots and keeps those under way, so that closing waits for them. */
export function createSequencePool(options: SequencePoolOptions) {
  const { registry } = options;
  const slots = new Slots(options.parallel, options.maxQueue);
  const inFlight = new Set<Promise<unknown>>();

  /** Runs one generation on a free sequence of the served model's context, within the server's slots. */
  async function withSequence<T>(base: GgufEntry, adapter: AdapterEntry | undefined, run: (context: LlamaContext, model: LlamaModel) => Promise<T>): Promise<T> {
    await slots.acquire();
    const work = (async () => {
      if (options.closed()) throw new ApiError(503, 'server_error', 'shutting_down', 'the server is shutting down');
      const started = performance.now();
      const context = await registry.getContext(base, adapter);
      const result = await run(context, await registry.loadModel(base));
      // The engine's own time per request (a slot held), which benches set against the platform's wall time.
      options.logger?.debug?.({ model: adapter?.name ?? base.id, engineMs: Math.round(performance.now() - started) }, 'inference request served');
      return result;
    })();
    inFlight.add(work);
    try {
      return await work;
    } finally {
      inFlight.delete(work);
      slots.release();
    }
  }

  /** Settles once every generation under way has ended. */
  async function settled(): Promise<void> {
    await Promise.allSettled([...inFlight]);
  }

  return { withSequence, settled };
}

export type SequencePool = ReturnType<typeof createSequencePool>;

export function budget(promptTokens: number, maxTokens: number | null | undefined, contextSize: number): number {
  const wanted = maxTokens ?? 16;
  if (promptTokens + wanted > contextSize) {
    throw invalid(
      `This model's maximum context length is ${contextSize} tokens. However, you requested ${promptTokens + wanted} tokens (${promptTokens} in the prompt, ${wanted} for the completion).`,
      'context_length_exceeded',
    );
  }
  return wanted;
}

function stops(stop: z.infer<typeof stopSchema>): string[] | undefined {
  if (stop == null) return undefined;
  const list = (Array.isArray(stop) ? stop : [stop]).filter((s) => s !== '');
  return list.length > 0 ? list : undefined;
}

function finishReason(stopReason: string): 'length' | 'stop' {
  return stopReason === 'maxTokens' ? 'length' : 'stop';
}

/**
 * Stop strings as OpenAI defines them: the text ends right before the first one, even inside a
 * token (node-llama-cpp's stop triggers drop the whole token). Generation is aborted once one shows.
 */
export function stopWatch(stop: z.infer<typeof stopSchema>, shutdown: AbortController) {
  const list = stops(stop) ?? [];
  const controller = new AbortController();
  const onShutdown = () => controller.abort();
  if (shutdown.signal.aborted) controller.abort();
  else shutdown.signal.addEventListener('abort', onShutdown, { once: true });
  let text = '';
  const generated: Token[] = [];
  let cut = -1;
  return {
    options: {
      signal: controller.signal,
      stopOnAbortSignal: true,
      onTextChunk: (chunk: string) => {
        text += chunk;
        if (cut >= 0 || list.length === 0) return;
        const found = list.map((s) => text.indexOf(s)).filter((i) => i >= 0);
        if (found.length > 0) {
          cut = Math.min(...found);
          controller.abort();
        }
      },
      onToken: (tokens: readonly Token[]) => {
        generated.push(...tokens);
      },
    },
    /** Stops listening for the shutdown; call once the generation is over. */
    release() {
      shutdown.signal.removeEventListener('abort', onShutdown);
    },
    result(response: string, stopReason: string) {
      if (shutdown.signal.aborted && cut < 0) throw new ApiError(503, 'server_error', 'shutting_down', 'the server shut down during this generation; retry');
      if (cut >= 0) return { text: text.slice(0, cut), finish: 'stop' as const, generated: generated.length };
      return { text: response, finish: finishReason(stopReason), generated: generated.length };
    },
    /** The generation's tokens, for {@link LlamaServerOptions.onEvaluated}. */
    tokens(): Token[] {
      return [...generated];
    },
  };
}
