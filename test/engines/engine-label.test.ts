// Messages about work a real engine did name the engine where they said "sandbox".
import { describe, expect, it } from 'vitest';
import { sandboxNote } from '../../src/agent/tools/launch-report.js';
import type { ToolContext } from '../../src/agent/tools/tool.js';
import { endpointLabel } from '@verdict/platform/engines/engine-setup';
import { renderReply } from '../../src/slack/blocks/reply.js';

const ctx = (sandbox: boolean, engine: string | null) => ({ sandbox, engine }) as unknown as ToolContext;

describe('engine label in messages', () => {
  it('a launch report names the engine of the run or training, else the configured one, else the sandbox', () => {
    expect(sandboxNote(ctx(false, 'llama.cpp, CPU, 2 threads'), 'llama.cpp, CPU, 2 threads')).toBe(' (engine: llama.cpp, CPU, 2 threads)');
    expect(sandboxNote(ctx(false, 'llama.cpp, CPU, 2 threads'), 'PyTorch LoRA, CPU, 2 threads')).toBe(' (engine: PyTorch LoRA, CPU, 2 threads)');
    expect(sandboxNote(ctx(false, 'llama.cpp, CPU, 2 threads'), null)).toBe(' (engine: llama.cpp, CPU, 2 threads)');
    expect(sandboxNote(ctx(true, null), 'simulator')).toBe(' (sandbox platform: simulated, no real GPU)');
    expect(sandboxNote(ctx(false, null), null)).toBe('');
  });

  it('the post carries an engine note instead of the sandbox note', () => {
    const real = JSON.stringify(renderReply({ to: 'U1', text: 'Launched.', parts: [], origin: { kind: 'engine', name: 'llama.cpp, CPU, 2 threads' } }).blocks);
    expect(real).toContain(':gear: Engine: llama.cpp, CPU, 2 threads');
    expect(real).not.toMatch(/sandbox/i);
    const simulated = JSON.stringify(renderReply({ to: 'U1', text: 'Launched.', parts: [], origin: { kind: 'sandbox' } }).blocks);
    expect(simulated).toContain('Sandbox platform: simulated');
  });

  it('an endpoint is named by its server when INFERENCE_SERVER says which, else as an OpenAI-compatible endpoint', () => {
    expect(endpointLabel('http://gpu:8000/v1', 'vllm')).toBe('vLLM at gpu:8000');
    expect(endpointLabel('http://gpu:30000', 'sglang')).toBe('SGLang at gpu:30000');
    expect(endpointLabel('http://gpu:8000')).toBe('OpenAI-compatible endpoint gpu:8000');
    expect(endpointLabel('http://gpu:8000', 'openai')).toBe('OpenAI-compatible endpoint gpu:8000');
  });
});
