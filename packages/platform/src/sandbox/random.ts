// Deterministic hashing and seeded pseudo-random numbers for the simulator: same inputs, same draws.

/** 53-bit string hash (cyrb53). */
function cyrb53(text: string, seed = 0): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/** A uniform draw in [0, 1) fixed by its parts. */
export function unit(...parts: ReadonlyArray<string | number>): number {
  return cyrb53(parts.join('\u001f')) / 2 ** 53;
}

/** A standard normal draw fixed by its parts (Box-Muller). */
export function normal(...parts: ReadonlyArray<string | number>): number {
  const u1 = Math.max(unit(...parts, 'n1'), 1e-12);
  const u2 = unit(...parts, 'n2');
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}

/** A 32-bit integer fixed by its parts. */
export function hash32(...parts: ReadonlyArray<string | number>): number {
  return cyrb53(parts.join('\u001f')) >>> 0;
}

/** Seeded generator of uniform draws in [0, 1) (mulberry32). */
export function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Integer in [min, max] from a uniform draw. */
export function pickInt(draw: number, min: number, max: number): number {
  return min + Math.floor(draw * (max - min + 1));
}

export function pick<T>(draw: number, items: readonly T[]): T {
  return items[Math.min(items.length - 1, Math.floor(draw * items.length))]!;
}

export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}
