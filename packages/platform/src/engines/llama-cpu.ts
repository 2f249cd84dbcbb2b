// node-llama-cpp's prebuilt CPU backend for tokenizing, imported on first use: the module takes
// about 0.6 s to load, which a worker that never trains on a real engine should not pay. One
// instance per process, shared by every trainer: each instance loads the backend and registers an
// exit hook of its own, and a trainer never disposes it (a process running several platforms, as
// the tests do, gathered one per platform).
import type { Llama } from 'node-llama-cpp';

let shared: Promise<Llama> | undefined;

export function loadCpuLlama(): Promise<Llama> {
  shared ??= import('node-llama-cpp')
    .then(({ getLlama, LlamaLogLevel }) => getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error }))
    .catch((error: unknown) => {
      // A failed load is tried again by the next caller.
      shared = undefined;
      throw error;
    });
  return shared;
}
