// The CPU tokenizing backend is loaded once per process and shared by every trainer.
import { describe, expect, it } from 'vitest';
import { loadCpuLlama } from '@verdict/platform/engines/llama-cpu';

describe('loadCpuLlama', () => {
  it('gives every caller the same instance, so trainers add no backend or exit hook of their own', async () => {
    const first = await loadCpuLlama();
    const hooks = process.listenerCount('beforeExit');
    const again = await Promise.all([loadCpuLlama(), loadCpuLlama()]);
    expect(again[0]).toBe(first);
    expect(again[1]).toBe(first);
    expect(first.disposed).toBe(false);
    expect(process.listenerCount('beforeExit')).toBe(hooks);
  });
});
