// node-llama-cpp's prebuilt CPU backend for tokenizing, imported on first use: the module takes
// about 0.6 s to load, which a worker that never trains on a real engine should not pay.
import type { Llama } from 'node-llama-cpp';

export async function loadCpuLlama(): Promise<Llama> {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  return getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
}
