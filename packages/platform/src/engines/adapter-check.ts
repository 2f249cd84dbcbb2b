// Before a run on a trained model: is the endpoint really serving the trained adapter, or silently the base model?
import type { InferenceEngine } from './inference.js';

export interface AdapterCheckInput {
  engine: InferenceEngine;
  /** The name runs ask for the trained model by (the adapter, or a hosted engine's served name). */
  trainedModel: string;
  baseModel: string;
  /** A question the model was trained on, as a run sends it. */
  prompt: string;
  maxTokens: number;
  stop?: string[];
  signal?: AbortSignal;
}

export type AdapterCheck =
  | { ok: true; how: 'answers differ' | 'adapter listed as loaded' | 'base model not askable' }
  | { ok: false; message: string };

/**
 * Asks the trained question of the trained model and of its base, greedily. Different answers
 * prove the adapter is applied. The same answers are accepted only when the endpoint lists the
 * trained model as an adapter on that base (`parent`, as vLLM and the embedded server list loaded
 * adapters): a weak training may leave one answer unchanged. Otherwise the endpoint is serving the
 * base model under the trained model's name, and the run must not start. A trained model the
 * endpoint cannot answer at all is refused with the endpoint's error; a base model the endpoint
 * does not serve (a hosted fine-tune whose base is not served) cannot be compared, and passes.
 */
export async function checkAdapterServed(input: AdapterCheckInput): Promise<AdapterCheck> {
  const { engine } = input;
  const ask = (model: string) =>
    engine.complete({ model, prompt: input.prompt, maxTokens: input.maxTokens, ...(input.stop ? { stop: input.stop } : {}), ...(input.signal ? { signal: input.signal } : {}) });
  let trained;
  try {
    trained = await ask(input.trainedModel);
  } catch (error) {
    return { ok: false, message: `the inference engine (${engine.label}) could not answer a trained question with model ${input.trainedModel}: ${error instanceof Error ? error.message : String(error)}` };
  }
  let base;
  try {
    base = await ask(input.baseModel);
  } catch {
    return { ok: true, how: 'base model not askable' };
  }
  if (trained.text !== base.text) return { ok: true, how: 'answers differ' };
  const models = await engine.listModels().catch(() => []);
  if (models.some((m) => m.id === input.trainedModel && m.parent === input.baseModel)) return { ok: true, how: 'adapter listed as loaded' };
  const shown = JSON.stringify(trained.text.length > 80 ? `${trained.text.slice(0, 80)}…` : trained.text);
  return {
    ok: false,
    message:
      `the inference engine (${engine.label}) seems to serve the base model ${input.baseModel} in place of the trained model ${input.trainedModel}: ` +
      `on a question it was trained on, both answered ${shown}, and the endpoint does not list the adapter as loaded. ` +
      `The run was refused and nothing was charged; check that the endpoint applies LoRA adapters (vLLM: --enable-lora; SGLang: --enable-lora) and load the adapter again`,
  };
}
