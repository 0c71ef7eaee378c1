/**
 * Byte-pair merging in O(n log n) for long pre-token pieces.
 *
 * The standard merge (tiktoken's, and gpt-tokenizer's `bytePairMerge`) repeatedly scans every
 * adjacent pair of parts for the lowest rank, leftmost on ties, and merges it: quadratic in the
 * length of the piece. This does the same merges in the same order with a binary heap keyed by
 * (rank, start offset of the left part): the heap's minimum is exactly the pair the scan would
 * pick, because a part's start offset orders parts as they stand in the piece and never changes
 * while the part lives. Stale heap entries (a pair one of whose parts has since been merged away
 * or grown) are recognised by their rank no longer being the pair's current rank, and skipped.
 *
 * Every part is a token (a merge only happens when the joined bytes have a rank, and single bytes
 * all have one), so the rank of a joined pair depends on the two parts' ranks alone and is cached
 * by that pair of numbers: a long run of one character asks the rank table a handful of times.
 */

/** Rank lookup by bytes, as gpt-tokenizer's BytePairEncodingCore offers it. */
export type RankOfBytes = (bytes: Uint8Array) => number | undefined;

const NONE = -1;
const UNKNOWN = -2;

/**
 * Ranks of joined token pairs, (left, right) -> rank or NONE: open addressing over typed arrays
 * (no Map and no boxed keys on the merge loop), cleared when three quarters full so its memory
 * stays fixed (3 MiB, allocated at the first long piece).
 */
class PairRankCache {
  private static readonly SLOTS = 1 << 18;
  private readonly lefts = new Int32Array(PairRankCache.SLOTS).fill(NONE);
  private readonly rights = new Int32Array(PairRankCache.SLOTS);
  private readonly ranks = new Int32Array(PairRankCache.SLOTS);
  private used = 0;

  get(left: number, right: number): number {
    const mask = PairRankCache.SLOTS - 1;
    for (let slot = hash(left, right) & mask; ; slot = (slot + 1) & mask) {
      const l = this.lefts[slot];
      if (l === NONE) return UNKNOWN;
      if (l === left && this.rights[slot] === right) return this.ranks[slot];
    }
  }

  set(left: number, right: number, rank: number) {
    if (this.used >= (PairRankCache.SLOTS * 3) / 4) {
      this.lefts.fill(NONE);
      this.used = 0;
    }
    const mask = PairRankCache.SLOTS - 1;
    let slot = hash(left, right) & mask;
    while (this.lefts[slot] !== NONE) slot = (slot + 1) & mask;
    this.lefts[slot] = left;
    this.rights[slot] = right;
    this.ranks[slot] = rank;
    this.used++;
  }
}

const hash = (left: number, right: number) => (Math.imul(left, 0x9e3779b1) ^ Math.imul(right + 0x7f4a7c15, 0x85ebca6b)) >>> 0;

export class ByteMerger {
  private readonly byteRanks = new Int32Array(256);
  private pairRanksCache: PairRankCache | null = null;

  constructor(private readonly rankOfBytes: RankOfBytes) {
    for (let b = 0; b < 256; b++) {
      const rank = rankOfBytes(Uint8Array.of(b));
      if (rank === undefined) throw new Error(`The rank table has no token for byte ${b}.`);
      this.byteRanks[b] = rank;
    }
  }

  /** The number of tokens `bytes` merges into. */
  count(bytes: Uint8Array): number {
    return this.merge(bytes).length;
  }

  /** The tokens (ranks) of `bytes`, in order: identical to the standard quadratic merge. */
  merge(bytes: Uint8Array): number[] {
    const n = bytes.length;
    if (n === 0) return [];
    // Parts are identified by their start offset; next/prev link the live ones.
    const token = new Int32Array(n);
    const next = new Int32Array(n);
    const prev = new Int32Array(n);
    // Rank of merging the part at i with its next part, NONE when they cannot merge.
    const pairRank = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      token[i] = this.byteRanks[bytes[i]];
      next[i] = i + 1 < n ? i + 1 : NONE;
      prev[i] = i - 1;
    }
    const heap = new MinHeap(n);
    for (let i = 0; i + 1 < n; i++) {
      const rank = this.joinedRank(bytes, i, i + 1, i + 2, token[i], token[i + 1]);
      pairRank[i] = rank;
      if (rank !== NONE) heap.push(rank, i);
    }
    let parts = n;
    while (heap.size > 0) {
      const rank = heap.topRank();
      const i = heap.pop();
      // Stale: the part at i is gone, or its pair has changed since this entry was pushed.
      if (token[i] === NONE || pairRank[i] !== rank) continue;
      const j = next[i];
      token[i] = rank;
      const k = next[j];
      next[i] = k;
      if (k !== NONE) prev[k] = i;
      token[j] = NONE;
      pairRank[j] = NONE;
      parts--;
      pairRank[i] = k === NONE ? NONE : this.joinedRank(bytes, i, k, partEnd(next, k, n), token[i], token[k]);
      if (pairRank[i] !== NONE) heap.push(pairRank[i], i);
      const p = prev[i];
      if (p !== NONE) {
        pairRank[p] = this.joinedRank(bytes, p, i, k === NONE ? n : k, token[p], token[i]);
        if (pairRank[p] !== NONE) heap.push(pairRank[p], p);
      }
    }
    const out: number[] = new Array(parts);
    let at = 0;
    for (let i = 0; i !== NONE; i = next[i]) out[at++] = token[i];
    return out;
  }

  private joinedRank(bytes: Uint8Array, start: number, _mid: number, end: number, left: number, right: number): number {
    this.pairRanksCache ??= new PairRankCache();
    const cached = this.pairRanksCache.get(left, right);
    if (cached !== UNKNOWN) return cached;
    const rank = this.rankOfBytes(bytes.subarray(start, end)) ?? NONE;
    this.pairRanksCache.set(left, right, rank);
    return rank;
  }
}

function partEnd(next: Int32Array, i: number, n: number): number {
  const after = next[i];
  return after === NONE ? n : after;
}

/**
 * A 4-ary min-heap of (rank, offset) pairs ordered by rank, then offset, each pair packed into one
 * double (rank * 2^32 + offset, exact below 2^53) so a comparison is one read and four children
 * share a cache line.
 */
class MinHeap {
  private keys: Float64Array;
  size = 0;

  constructor(capacity: number) {
    this.keys = new Float64Array(Math.max(16, capacity));
  }

  topRank(): number {
    return Math.floor(this.keys[0] / OFFSET_SPAN);
  }

  push(rank: number, offset: number) {
    if (this.size === this.keys.length) this.grow();
    const keys = this.keys;
    const key = rank * OFFSET_SPAN + offset;
    let at = this.size++;
    while (at > 0) {
      const parent = (at - 1) >> 2;
      const pk = keys[parent];
      if (pk < key) break;
      keys[at] = pk;
      at = parent;
    }
    keys[at] = key;
  }

  /** Removes the smallest entry and returns its offset. */
  pop(): number {
    const keys = this.keys;
    const top = keys[0] % OFFSET_SPAN;
    const size = --this.size;
    if (size === 0) return top;
    const key = keys[size];
    let at = 0;
    for (;;) {
      const first = 4 * at + 1;
      if (first >= size) break;
      let child = first;
      let ck = keys[first];
      const last = Math.min(first + 4, size);
      for (let c = first + 1; c < last; c++) {
        if (keys[c] < ck) {
          ck = keys[c];
          child = c;
        }
      }
      if (ck > key) break;
      keys[at] = ck;
      at = child;
    }
    keys[at] = key;
    return top;
  }

  private grow() {
    const keys = new Float64Array(this.keys.length * 2);
    keys.set(this.keys);
    this.keys = keys;
  }
}

const OFFSET_SPAN = 2 ** 32;
