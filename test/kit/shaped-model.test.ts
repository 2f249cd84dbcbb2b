// The benches' random-weight models of a real model's shapes (test/kit/shaped-model.ts, gguf_shapes.py):
// the file has the asked shape, llama.cpp loads it and generates from it, and it is written once.
import { mkdtemp, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { getLlama, LlamaCompletion, LlamaLogLevel, readGgufFileInfo } from 'node-llama-cpp';
import { afterEach, describe, expect, it } from 'vitest';
import { pythonWithTorch } from './engines.js';
import { shapedModel } from './shaped-model.js';

const PYTHON = pythonWithTorch();
if (!PYTHON) console.warn('SKIPPED the shaped-model writer test: no python with numpy and torch (apt-get install python3-torch)');

const SHAPE = { n_embd: 64, n_layer: 2, n_head: 4, n_head_kv: 2, n_ff: 128, n_vocab: 1024, context: 256 };

describe.skipIf(!PYTHON)('shaped models for the benches', () => {
  const cache = process.env.BENCH_MODEL_CACHE;
  afterEach(() => {
    if (cache === undefined) delete process.env.BENCH_MODEL_CACHE;
    else process.env.BENCH_MODEL_CACHE = cache;
  });

  it('writes a qwen2 GGUF of the asked shape once, which llama.cpp loads and generates from', async () => {
    process.env.BENCH_MODEL_CACHE = await mkdtemp(path.join(os.tmpdir(), 'shaped-'));
    process.env.TRAINER_PYTHON ??= PYTHON!;
    const file = await shapedModel('tiny', SHAPE);
    const info = await readGgufFileInfo(file, { readTensorInfo: true });
    const meta = info.metadata as unknown as { general: { architecture: string }; qwen2: Record<string, unknown>; tokenizer: { ggml: { tokens: string[] } } };
    expect(meta.general.architecture).toBe('qwen2');
    expect(meta.qwen2).toMatchObject({ embedding_length: 64, block_count: 2, feed_forward_length: 128, attention: { head_count: 4, head_count_kv: 2 } });
    expect(meta.tokenizer.ggml.tokens).toHaveLength(1024);
    expect(info.fullTensorInfo?.find((t) => t.name === 'blk.1.ffn_down.weight')?.dimensions.map(Number)).toEqual([128, 64]);

    // Asked again: the same file, not written again.
    const written = (await stat(file)).mtimeMs;
    expect(await shapedModel('tiny', SHAPE)).toBe(file);
    expect((await stat(file)).mtimeMs).toBe(written);

    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: file });
    try {
      const context = await model.createContext({ contextSize: 128, threads: 1 });
      const completion = new LlamaCompletion({ contextSequence: context.getSequence() });
      const meta = await completion.generateCompletionWithMeta('Once upon a time', { maxTokens: 4 });
      expect(meta.metadata.stopReason).toBe('maxTokens');
      await context.dispose();
    } finally {
      await model.dispose();
    }
  }, 60_000);
});
