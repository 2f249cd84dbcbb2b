// Turns a spend-guard refusal into a tool result: an error for the model, an approval for the person.
import type { GuardDecision } from '../spend-guard.js';
import type { ToolResult } from './tool.js';

export function refusalResult(decision: Extract<GuardDecision, { allowed: false }>): ToolResult {
  return {
    content: `${decision.reason}${decision.approval ? ' An "Approve" button is attached for the person; tell them what it would launch and for how many credits.' : ''}`,
    isError: true,
    ...(decision.approval ? { parts: [{ kind: 'approval', intent: decision.approval.intent, credits: decision.approval.credits }] } : {}),
  };
}
