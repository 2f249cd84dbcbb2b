import { describe, expect, it } from 'vitest';
import { buildRequest, toMessageParams } from '../../src/agent/conversation.js';
import type { StoredMessage } from '../../src/store/tables.js';

let nextId = 1;
function row(role: 'user' | 'assistant', content: unknown[], extra: Partial<StoredMessage> = {}): StoredMessage {
  return {
    id: String(nextId++),
    team_id: 'T',
    chat_id: '1',
    turn_id: '1',
    role,
    content,
    stop_reason: role === 'assistant' ? 'end_turn' : null,
    usage: null,
    attachments: null,
    created_at: new Date(),
    ...extra,
  };
}

describe('toMessageParams', () => {
  it('merges consecutive messages of one role (a failed turn leaves a question unanswered)', () => {
    const params = toMessageParams([
      row('user', [{ type: 'text', text: 'first' }]),
      row('user', [{ type: 'text', text: 'second' }]),
      row('assistant', [{ type: 'text', text: 'answer' }]),
    ]);
    expect(params).toHaveLength(2);
    expect(params[0]!.content).toEqual([
      { type: 'text', text: 'first' },
      { type: 'text', text: 'second' },
    ]);
  });

  it('closes a tool call that a crash left without a result', () => {
    const params = toMessageParams([
      row('user', [{ type: 'text', text: 'go' }]),
      row('assistant', [{ type: 'tool_use', id: 'toolu_1', name: 'x', input: {} }], { stop_reason: 'tool_use' }),
      row('user', [{ type: 'text', text: 'hello again' }]),
    ]);
    expect(params.map((p) => p.role)).toEqual(['user', 'assistant', 'user']);
    const last = params[2]!.content as Array<{ type: string }>;
    expect(last[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_1', is_error: true });
    expect(last[1]).toMatchObject({ type: 'text', text: 'hello again' });
  });
});

describe('buildRequest', () => {
  it('puts cache breakpoints on the tools, the system prompt and the newest message without mutating history', () => {
    const messages = toMessageParams([row('user', [{ type: 'text', text: 'hi' }])]);
    const request = buildRequest({
      model: 'm',
      system: 'SYSTEM',
      tools: [
        { name: 'a', description: 'A', input_schema: { type: 'object' } },
        { name: 'b', description: 'B', input_schema: { type: 'object' } },
      ],
      messages,
    });
    expect(request.tools![0]).not.toHaveProperty('cache_control');
    expect(request.tools![1]).toHaveProperty('cache_control', { type: 'ephemeral' });
    expect(request.system).toEqual([{ type: 'text', text: 'SYSTEM', cache_control: { type: 'ephemeral' } }]);
    expect((request.messages[0]!.content as unknown as Array<Record<string, unknown>>)[0]).toHaveProperty('cache_control');
    expect((messages[0]!.content as unknown as Array<Record<string, unknown>>)[0]).not.toHaveProperty('cache_control');
  });
});
