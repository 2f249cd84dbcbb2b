// Joins two runs question by question, by question id.
//
// Runs listing the same ids in the same order are joined in one positional pass. Otherwise a
// typed-array hash table (ids hashed once, open addressing) is used instead of a Map: measured on
// this project's 2-core VM (docs/performance.md, "Analysis"), a Map of 1,000,000 string ids took
// 600-860 ms to build and ~500 ms for the lookups, more than the whole 1 s target for 1,000,000
// shuffled questions, where this table joins them in under 1 s.

import { AnalysisError } from './errors.js';

export interface Identified {
  questionId: string;
}

export interface Join {
  /** For each question of the second run, the position of the question with its id in the first run, or -1. */
  matches: Int32Array;
  /** Positions in the first run of the questions the second run does not have. */
  onlyBefore: number[];
}

/** A run's ids, ready to be joined against; built by `indexById`. */
export type IdIndex = RunIndex;

/** Indexes a run by id. Its duplicate ids are reported (AnalysisError 'duplicate_question') by the first `joinById` against it. */
export function indexById(run: readonly Identified[], name: string): IdIndex {
  return new RunIndex(run, name);
}

/**
 * Matches each question of `after` with the question of `before` (indexed by `indexById`) that has
 * its id. Throws AnalysisError('duplicate_question') when an id occurs twice in `before`, then in `after`.
 */
export function joinById(before: readonly Identified[], beforeIndex: IdIndex, after: readonly Identified[], afterName: string): Join {
  const matches = beforeIndex.positionsOf(after, afterName);
  const matched = new Uint8Array(before.length);
  for (let j = 0; j < matches.length; j++) if (matches[j]! >= 0) matched[matches[j]!] = 1;
  const onlyBefore: number[] = [];
  for (let i = 0; i < before.length; i++) if (matched[i] === 0) onlyBefore.push(i);
  return { matches, onlyBefore };
}

/** FNV-1a over UTF-16 code units, then murmur3's finalizer so the low bits are well mixed. */
function hashId(id: string): number {
  let h = 0x811c9dc5 | 0;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

function duplicateError(id: string, run: string): AnalysisError {
  return new AnalysisError('duplicate_question', `Question ${id} appears more than once in the ${run} run.`);
}

/** Indices 0..n-1 ordered by the unsigned value of `keys` (LSD radix sort, 11 + 11 + 10 bits). */
function orderByKey(keys: Int32Array): Int32Array {
  const n = keys.length;
  let order = new Int32Array(n);
  let spare = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  const counts = new Int32Array(2048);
  for (let shift = 0; shift < 32; shift += 11) {
    const mask = shift === 22 ? 0x3ff : 0x7ff;
    counts.fill(0);
    for (let i = 0; i < n; i++) counts[(keys[i]! >>> shift) & mask]!++;
    let sum = 0;
    for (let b = 0; b <= mask; b++) {
      const c = counts[b]!;
      counts[b] = sum;
      sum += c;
    }
    for (let i = 0; i < n; i++) {
      const k = order[i]!;
      spare[counts[(keys[k]! >>> shift) & mask]!++] = k;
    }
    [order, spare] = [spare, order];
  }
  return order;
}

/** The questions of one run, checked for duplicate ids, ready to locate another run's questions. */
class RunIndex {
  private readonly hashes: Int32Array;
  private slots: Int32Array | null = null;
  private mask = 0;

  private unique = false;

  constructor(
    private readonly items: readonly Identified[],
    private readonly run: string,
  ) {
    const n = items.length;
    this.hashes = new Int32Array(n);
    for (let i = 0; i < n; i++) this.hashes[i] = hashId(items[i]!.questionId);
  }

  /** Throws AnalysisError('duplicate_question') when an id occurs twice in this run. */
  checkUnique(): void {
    if (this.unique) return;
    const { items, hashes } = this;
    const n = items.length;
    const order = orderByKey(hashes);
    for (let start = 0; start < n; ) {
      const h = hashes[order[start]!]!;
      let end = start + 1;
      while (end < n && hashes[order[end]!] === h) end++;
      for (let a = start; a < end; a++) {
        for (let b = a + 1; b < end; b++) {
          const id = items[order[a]!]!.questionId;
          if (id === items[order[b]!]!.questionId) throw duplicateError(id, this.run);
        }
      }
      start = end;
    }
    this.unique = true;
  }

  /**
   * For each question of `other`, its position in this run or -1. Throws AnalysisError when an id
   * occurs twice in either run.
   */
  positionsOf(other: readonly Identified[], otherRun: string): Int32Array {
    const items = this.items;
    const positions = new Int32Array(other.length);
    let misses = 0;
    for (let j = 0; j < other.length; j++) {
      if (j < items.length && items[j]!.questionId === other[j]!.questionId) {
        positions[j] = j;
      } else {
        positions[j] = -2;
        misses++;
      }
    }
    // Every position matched its own index, so no position repeats and `other` has no duplicates.
    if (misses === 0) {
      this.checkUnique();
      return positions;
    }

    // Two passes keep each loop's memory reads independent, so the CPU can overlap their cache misses:
    // first a candidate by hash alone, then the exact string comparison.
    const slots = this.slots ?? this.buildSlots();
    const mask = this.mask;
    for (let j = 0; j < other.length; j++) {
      if (positions[j] !== -2) continue;
      const h = hashId(other[j]!.questionId);
      let slot = h & mask;
      let candidate = -1;
      for (;;) {
        const entry = slots[2 * slot + 1]!;
        if (entry === 0) break;
        if (slots[2 * slot] === h) {
          candidate = entry - 1;
          break;
        }
        slot = (slot + 1) & mask;
      }
      positions[j] = candidate === -1 ? -1 : -3 - candidate;
    }
    for (let j = 0; j < other.length; j++) {
      const p = positions[j]!;
      if (p > -3) continue;
      const id = other[j]!.questionId;
      positions[j] = items[-3 - p]!.questionId === id ? -3 - p : this.find(id);
    }
    const taken = new Uint8Array(items.length);
    let unmatched: Set<string> | null = null;
    for (let j = 0; j < other.length; j++) {
      const p = positions[j]!;
      const id = other[j]!.questionId;
      if (p >= 0) {
        if (taken[p] === 1) throw duplicateError(id, otherRun);
        taken[p] = 1;
      } else {
        unmatched ??= new Set();
        const size = unmatched.size;
        unmatched.add(id);
        if (unmatched.size === size) throw duplicateError(id, otherRun);
      }
    }
    return positions;
  }

  private find(id: string): number {
    const slots = this.slots ?? this.buildSlots();
    const h = hashId(id);
    let slot = h & this.mask;
    for (;;) {
      const entry = slots[2 * slot + 1]!;
      if (entry === 0) return -1;
      if (slots[2 * slot] === h && this.items[entry - 1]!.questionId === id) return entry - 1;
      slot = (slot + 1) & this.mask;
    }
  }

  /**
   * Open addressing, at most half full; each slot holds a hash next to position + 1 (0 = empty).
   * Building it also proves the ids unique.
   */
  private buildSlots(): Int32Array {
    const { items, hashes } = this;
    let size = 16;
    while (size < items.length * 2) size *= 2;
    const slots = new Int32Array(size * 2);
    const mask = size - 1;
    for (let i = 0; i < items.length; i++) {
      const h = hashes[i]!;
      let slot = h & mask;
      for (;;) {
        const entry = slots[2 * slot + 1]!;
        if (entry === 0) break;
        if (slots[2 * slot] === h && items[entry - 1]!.questionId === items[i]!.questionId) {
          throw duplicateError(items[i]!.questionId, this.run);
        }
        slot = (slot + 1) & mask;
      }
      slots[2 * slot] = h;
      slots[2 * slot + 1] = i + 1;
    }
    this.slots = slots;
    this.mask = mask;
    this.unique = true;
    return slots;
  }
}
