// The one codec of chat button values: a grant as canonical JSON, or the key of the stored grant when
// the JSON would pass Slack's limit. A click is judged against the stored grant, never its value.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ButtonGrant, LaunchIntent, NextAction } from '../agent/reply.js';
import { SLACK_LIMITS } from './limits.js';

const launchIntent = z.discriminatedUnion('tool', [
  z.object({ tool: z.literal('benchmark-launch'), benchmarkId: z.string(), modelId: z.string() }),
  z.object({ tool: z.literal('dataset-build'), runId: z.string(), augmentation: z.number(), heldOutFraction: z.number() }),
  z.object({ tool: z.literal('training-launch'), datasetId: z.string(), baseModelId: z.string() }),
]) satisfies z.ZodType<LaunchIntent>;

const nextAction = z.discriminatedUnion('action', [
  z.object({ action: z.literal('train_on_failures'), runId: z.string(), modelId: z.string(), heldOutFraction: z.number(), augmentation: z.number() }),
  z.object({ action: z.literal('run_benchmark'), benchmarkId: z.string(), modelId: z.string() }),
  z.object({ action: z.literal('compare'), beforeRunId: z.string(), afterRunId: z.string() }),
  z.object({ action: z.literal('keep_model'), modelId: z.string() }),
]) satisfies z.ZodType<NextAction>;

export const buttonGrantSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('approve'), intent: launchIntent, credits: z.number() }),
  z.object({ kind: z.literal('next'), action: nextAction }),
  z.object({ kind: z.literal('retry'), trigger: z.string() }),
  z.object({ kind: z.literal('pick'), text: z.string() }),
]) satisfies z.ZodType<ButtonGrant>;

/** The value of a button whose grant is too large to carry: the key of the grant stored with the post. */
const grantRef = z.object({ ref: z.string().regex(/^[0-9a-f]{32}$/) }).strict();

/** JSON with object keys sorted, so a grant encodes the same before and after a round trip through jsonb. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

/** The key a large grant is stored under: a digest of its canonical JSON. */
export function grantKey(grant: ButtonGrant): string {
  return createHash('sha256').update(canonicalJson(grant)).digest('hex').slice(0, 32);
}

/**
 * The value a button carries for `grant`: its canonical JSON when that fits Slack's limit, else
 * `{"ref":"<key>"}`. Either way the post stores the grant itself with the value, so the key is
 * enough; the value never passes {@link SLACK_LIMITS.buttonValue} and is always valid JSON.
 */
export function encodeButtonValue(grant: ButtonGrant): string {
  const json = canonicalJson(grant);
  return json.length <= SLACK_LIMITS.buttonValue ? json : canonicalJson({ ref: grantKey(grant) });
}

export type DecodedButtonValue = { grant: ButtonGrant } | { ref: string };

/** What a button value says, or undefined when it is not a value this codec wrote. */
export function decodeButtonValue(value: unknown): DecodedButtonValue | undefined {
  if (typeof value !== 'string') return undefined;
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    return undefined;
  }
  const grant = buttonGrantSchema.safeParse(json);
  if (grant.success) return { grant: grant.data };
  const ref = grantRef.safeParse(json);
  return ref.success ? { ref: ref.data.ref } : undefined;
}

/** The grant a value carries in full (the buttons of posts stored before typed replies), or undefined. */
export function parseGrant(value: unknown): ButtonGrant | undefined {
  const decoded = decodeButtonValue(value);
  return decoded && 'grant' in decoded ? decoded.grant : undefined;
}
