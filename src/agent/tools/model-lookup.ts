// model-lookup: resolves a model name to the platform's exact id; ambiguity becomes pick buttons.
import { z } from 'zod';
import type { ReplyPart } from '../reply.js';
import { defineTool } from './tool.js';

export const modelLookup = defineTool({
  name: 'model-lookup',
  description:
    'Find a model on the platform by full or partial name (case-insensitive). Returns the exact model id(s), size and whether it is a base model or one produced by training. When several or none match, buttons to pick are attached for the person.',
  input: z.object({ query: z.string().min(1).describe('Model name or part of it, e.g. Qwen2.5-0.5B-Instruct') }),
  run: async ({ query }, ctx) => {
    const found = await ctx.platform.findModels(query);
    const exact = found.filter((m) => m.id.toLowerCase() === query.toLowerCase() || m.name.toLowerCase() === query.toLowerCase());
    const matches = exact.length === 1 ? exact : found;
    const lines = matches.slice(0, 8).map((m) => `${m.id} (${m.sizeLabel}, ${m.kind === 'base' ? 'base model' : `fine-tuned from ${m.baseModelId}`})`);
    if (matches.length === 1) return { content: `Exact match: ${lines[0]}` };
    let candidates = matches;
    if (matches.length === 0) {
      // Offer the closest names: models sharing the longest word of the query.
      const words = query.split(/[^A-Za-z0-9.]+/).filter((w) => w.length >= 3).sort((a, b) => b.length - a.length);
      for (const word of words) {
        candidates = await ctx.platform.findModels(word);
        if (candidates.length > 0) break;
      }
    }
    const options = candidates.slice(0, 5).map((m) => ({ label: m.id, grant: { kind: 'pick' as const, text: `Use the model ${m.id}` } }));
    const parts: ReplyPart[] = options.length > 0 ? [{ kind: 'choices', options }] : [];
    if (matches.length === 0) {
      return {
        content: `No model matches "${query}".${candidates.length ? ` Closest: ${candidates.slice(0, 5).map((m) => m.id).join(', ')} (offered as buttons). Ask the person which one they mean.` : ' Ask the person for the exact name.'}`,
        isError: true,
        parts,
      };
    }
    return {
      content: `${matches.length} models match "${query}": ${lines.join('; ')}. They are offered as buttons; ask the person which one they mean.`,
      parts,
    };
  },
});
