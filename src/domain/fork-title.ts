/** One trailing " (fork N)", end-anchored: "Q1 (fork 2) Analysis" has none. */
const FORK_SUFFIX = /^([\s\S]*) \(fork ([0-9]+)\)$/;

/** The base of a title: the title with one trailing " (fork N)" removed. */
export function forkTitleBase(title: string): string {
  const match = FORK_SUFFIX.exec(title);
  return match ? match[1] : title;
}

/** The fork number of a title whose base is `base`, or null. */
export function forkNumberOf(title: string, base: string): bigint | null {
  const match = FORK_SUFFIX.exec(title);
  return match && match[1] === base ? BigInt(match[2]) : null;
}

/** `"<base> (fork N)"` with N one more than the highest fork number already used with that base. */
export function nextForkTitle(base: string, highest: bigint | null): string {
  return `${base} (fork ${(highest ?? 0n) + 1n})`;
}
