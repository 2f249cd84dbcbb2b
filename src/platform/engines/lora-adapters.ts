// Registers a produced LoRA adapter with an OpenAI-compatible endpoint (vLLM's runtime LoRA route, which the embedded server speaks too).
import { request } from 'undici';
import type { AdapterRegistration } from './training-supervisor.js';

export interface AdapterEndpoint {
  /** Endpoint root, e.g. `http://127.0.0.1:8080` (a trailing `/v1` is accepted too). */
  baseUrl: string;
  apiKey?: string;
  /** Per attempt. Default 60 s (loading reads the adapter file). */
  timeoutMs?: number;
  /** Attempts on 5xx and network errors. Default 3. */
  attempts?: number;
}

/**
 * `POST /v1/load_lora_adapter` with `{lora_name, lora_path, base_model}`. Loading the same name and
 * path again is a no-op on the endpoint, so this is safe to repeat (after a restart, before a run).
 */
export async function loadLoraAdapter(endpoint: AdapterEndpoint, adapter: AdapterRegistration): Promise<void> {
  const root = endpoint.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
  const timeoutMs = endpoint.timeoutMs ?? 60_000;
  const attempts = Math.max(1, endpoint.attempts ?? 3);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (endpoint.apiKey) headers.authorization = `Bearer ${endpoint.apiKey}`;
  const body = JSON.stringify({ lora_name: adapter.name, lora_path: adapter.path, base_model: adapter.baseModelId });
  let last = '';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      const response = await request(`${root}/v1/load_lora_adapter`, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await response.body.text();
      if (response.statusCode >= 200 && response.statusCode < 300) return;
      last = `answered ${response.statusCode}: ${text.slice(0, 300)}`;
      if (response.statusCode < 500) break;
    } catch (error) {
      last = `failed: ${error instanceof Error ? error.message : String(error)}`;
    }
    if (attempt < attempts) await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
  }
  throw new Error(`loading adapter ${adapter.name} (${adapter.path}) on ${root} ${last}`);
}
