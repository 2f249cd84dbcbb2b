// Whether the bundled trainer (trainer/*.py) can train a base model GGUF file: its architecture and every tensor's type, read from the header before anything is charged.
import path from 'node:path';
import { GgmlType, readGgufFileInfo } from 'node-llama-cpp';

/**
 * The ggml tensor types trainer/gguf_file.py reads (its `SUPPORTED_TYPE_NAMES`, in the same order; a test
 * holds the two lists equal).
 */
export const TRAINER_TENSOR_TYPES: readonly string[] = [
  'F32', 'F16', 'BF16', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q8_0', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K', 'IQ4_NL', 'IQ4_XS',
];

/** The architectures trainer/model.py builds (its `ARCHS`; a test holds the two equal). */
export const TRAINER_ARCHITECTURES: readonly string[] = ['gemma2', 'gemma3', 'llama', 'phi3', 'qwen2', 'qwen3'];

/**
 * Why the bundled trainer cannot train the GGUF file at `baseModelPath`, in the user's words, or null
 * when it can: an architecture it does not build, or tensors stored in a type it does not read (named
 * with a few of the tensors, and the types it reads). Reads the header only.
 */
export async function bundledTrainerRefusal(baseModelPath: string): Promise<string | null> {
  const file = path.basename(baseModelPath);
  let info: Awaited<ReturnType<typeof readGgufFileInfo>>;
  try {
    info = await readGgufFileInfo(baseModelPath, { readTensorInfo: true, logWarnings: false });
  } catch (error) {
    return `the base model ${file} could not be read as a GGUF file: ${(error as Error).message}`;
  }
  const arch = (info.metadata as { general?: { architecture?: unknown } }).general?.architecture;
  if (typeof arch !== 'string' || !TRAINER_ARCHITECTURES.includes(arch)) {
    return `the base model ${file} has architecture ${typeof arch === 'string' ? arch : '(none)'}, which the bundled trainer cannot train; it trains ${TRAINER_ARCHITECTURES.join(', ')}`;
  }
  const unread = new Map<string, string[]>();
  for (const tensor of info.fullTensorInfo ?? info.tensorInfo ?? []) {
    const type = GgmlType[tensor.ggmlType] ?? `type ${tensor.ggmlType}`;
    if (TRAINER_TENSOR_TYPES.includes(type)) continue;
    const names = unread.get(type) ?? [];
    names.push(tensor.name);
    unread.set(type, names);
  }
  if (unread.size === 0) return null;
  const found = [...unread].map(([type, names]) => `${type} (${names.slice(0, 3).join(', ')}${names.length > 3 ? `, and ${names.length - 3} more` : ''})`);
  return (
    `the base model ${file} has tensors stored as ${found.join('; ')}, which the bundled trainer cannot read; ` +
    `it reads ${TRAINER_TENSOR_TYPES.join(', ')} (a Q4_K_M, Q5_K_M, Q8_0 or f16 file of the model trains)`
  );
}
