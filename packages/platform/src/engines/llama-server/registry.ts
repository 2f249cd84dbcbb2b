// The embedded server's models: the GGUFs of its folder (rescanned on demand), the LoRA adapters loaded at run time, and the llama.cpp models and contexts loaded for them.
import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { readGgufFileInfo, type Llama, type LlamaContext, type LlamaModel } from 'node-llama-cpp';
import { chatTemplateOf } from '../chat-form.js';
import type { LlamaServerLogger } from './options.js';
import { ApiError, invalid } from './requests.js';

const MAX_CONTEXT_DEFAULT = 4096;

export interface GgufEntry {
  id: string;
  path: string;
  mtimeMs: number;
  size: number;
  isAdapter: boolean;
  chatTemplate: string | undefined;
  trainContextSize: number | undefined;
}

export interface AdapterEntry {
  name: string;
  path: string;
  base: string;
  created: number;
}

export interface ModelRegistryOptions {
  /** The folder, resolved. */
  modelsDir: string;
  llama: Llama;
  /** Sequences per context. */
  parallel: number;
  threads: number;
  contextSize?: number;
  logger?: LlamaServerLogger;
}

export type ModelRegistry = ReturnType<typeof createModelRegistry>;

/**
 * The registry's maps stay consistent: a GGUF that changed on disk drops its model and every
 * context served from it (adapters on it included), and a context is keyed by the name it serves.
 */
export function createModelRegistry(options: ModelRegistryOptions) {
  const { modelsDir, llama, parallel, logger } = options;
  const ggufs = new Map<string, GgufEntry>();
  const adapters = new Map<string, AdapterEntry>();
  const models = new Map<string, Promise<LlamaModel>>();
  const contexts = new Map<string, Promise<LlamaContext>>();

  async function inspect(path: string): Promise<GgufEntry> {
    const info = await stat(path);
    const id = basename(path).replace(/\.gguf$/i, '');
    const known = [...ggufs.values()].find((entry) => entry.path === path);
    if (known && known.mtimeMs === info.mtimeMs && known.size === info.size) return known;
    let meta: Awaited<ReturnType<typeof readGgufFileInfo>>;
    try {
      meta = await readGgufFileInfo(path, { readTensorInfo: false, logWarnings: false });
    } catch (err) {
      throw invalid(`${basename(path)} is not a readable GGUF file: ${(err as Error).message}`, 'invalid_gguf');
    }
    const metadata = meta.metadata as unknown as {
      general?: { type?: string; architecture?: string };
      [arch: string]: unknown;
    };
    const arch = metadata.general?.architecture;
    if (typeof arch !== 'string' || arch === '') throw invalid(`${basename(path)} is not a usable GGUF file: it names no general.architecture`, 'invalid_gguf');
    const archMeta = arch ? (metadata[arch] as { context_length?: number } | undefined) : undefined;
    return {
      id,
      path,
      mtimeMs: info.mtimeMs,
      size: info.size,
      isAdapter: metadata.general?.type === 'adapter',
      chatTemplate: chatTemplateOf(metadata),
      trainContextSize: archMeta?.context_length,
    };
  }

  /** Rescans the folder: the base models by id (file name without .gguf). */
  async function scan(): Promise<Map<string, GgufEntry>> {
    let names: string[];
    try {
      names = await readdir(modelsDir);
    } catch (err) {
      throw new ApiError(503, 'server_error', 'models_dir_unreadable', `MODELS_DIR ${modelsDir} cannot be read: ${(err as Error).message}`);
    }
    const found = new Map<string, GgufEntry>();
    for (const name of names.filter((n) => n.toLowerCase().endsWith('.gguf')).sort()) {
      try {
        const entry = await inspect(join(modelsDir, name));
        found.set(entry.id, entry);
      } catch (err) {
        logger?.warn({ file: name, err: (err as Error).message }, 'skipping a GGUF file that cannot be read');
      }
    }
    for (const [id, entry] of ggufs) {
      if (found.get(id)?.path === entry.path && found.get(id)?.mtimeMs === entry.mtimeMs) continue;
      ggufs.delete(id);
      void dropModel(id);
    }
    for (const [id, entry] of found) ggufs.set(id, entry);
    return new Map([...found].filter(([, entry]) => !entry.isAdapter));
  }

  async function dropModel(id: string): Promise<void> {
    const model = models.get(id);
    models.delete(id);
    for (const served of [id, ...[...adapters.values()].filter((a) => a.base === id).map((a) => a.name)]) await dropContext(served);
    if (model) await (await model.catch(() => undefined))?.dispose();
  }

  async function dropContext(served: string): Promise<void> {
    const context = contexts.get(served);
    contexts.delete(served);
    if (context) await (await context.catch(() => undefined))?.dispose();
  }

  async function baseEntry(id: string): Promise<GgufEntry> {
    let entry = ggufs.get(id);
    if (!entry || entry.isAdapter) entry = (await scan()).get(id);
    if (!entry) throw new ApiError(404, 'invalid_request_error', 'model_not_found', `The model \`${id}\` does not exist.`);
    return entry;
  }

  /** Resolves a request's `model` to its base GGUF and, for an adapter name, the adapter. */
  async function resolveModel(id: string): Promise<{ base: GgufEntry; adapter?: AdapterEntry }> {
    const adapter = adapters.get(id);
    if (adapter) return { base: await baseEntry(adapter.base), adapter };
    return { base: await baseEntry(id) };
  }

  function loadModel(base: GgufEntry): Promise<LlamaModel> {
    let model = models.get(base.id);
    if (!model) {
      model = llama.loadModel({ modelPath: base.path });
      models.set(base.id, model);
      model.catch(() => models.delete(base.id));
    }
    return model;
  }

  function sequenceSize(base: GgufEntry): number {
    return options.contextSize ?? Math.min(base.trainContextSize ?? MAX_CONTEXT_DEFAULT, MAX_CONTEXT_DEFAULT);
  }

  function getContext(base: GgufEntry, adapter: AdapterEntry | undefined): Promise<LlamaContext> {
    const served = adapter?.name ?? base.id;
    let context = contexts.get(served);
    if (!context) {
      context = loadModel(base).then((model) =>
        model.createContext({
          contextSize: sequenceSize(base),
          sequences: parallel,
          threads: options.threads,
          ...(adapter ? { lora: { adapters: [{ filePath: adapter.path }] } } : {}),
        }),
      );
      contexts.set(served, context);
      context.catch(() => contexts.delete(served));
    }
    return context;
  }

  return { adapters, inspect, scan, dropContext, resolveModel, loadModel, sequenceSize, getContext };
}
