// Seeded pseudo-random numbers (xoshiro128 family), so every bootstrap is reproducible bit for bit.

/** State of one xoshiro128 generator: four 32-bit words, never all zero. */
export type RandomState = Int32Array;

/** Seeds a generator from a 32-bit seed via splitmix32; `stream` gives independent generators for one seed. */
export function seedRandom(seed: number, stream = 0): RandomState {
  let x = (seed ^ Math.imul(stream + 1, 0x632be5ab)) >>> 0;
  const state = new Int32Array(4);
  for (let i = 0; i < 4; i++) {
    x = (x + 0x9e3779b9) | 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    state[i] = z ^ (z >>> 16);
  }
  if ((state[0]! | state[1]! | state[2]! | state[3]!) === 0) state[0] = 1;
  return state;
}

/** Advances `state` and returns the next xoshiro128** output as a signed 32-bit integer. */
export function nextInt32(state: RandomState): number {
  const s1 = state[1]!;
  const m = Math.imul(s1, 5);
  const result = Math.imul((m << 7) | (m >>> 25), 9);
  const t = s1 << 9;
  const s2 = state[2]! ^ state[0]!;
  const s3 = state[3]! ^ s1;
  state[1] = s1 ^ s2;
  state[0] = state[0]! ^ s3;
  state[2] = s2 ^ t;
  state[3] = (s3 << 11) | (s3 >>> 21);
  return result;
}

/** Next output as a float in [0, 1). */
export function nextUnit(state: RandomState): number {
  return (nextInt32(state) >>> 0) * 2.3283064365386963e-10;
}
