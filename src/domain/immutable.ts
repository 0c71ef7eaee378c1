/**
 * Values the process promises never to change again, such as a finished message's stored parts
 * (finished messages are immutable: MESSAGE_IMMUTABLE). They are deep-frozen, so a stray write
 * throws instead of corrupting what is derived from them, and registered, so code that derives
 * something from one (a payload piece, its canonical JSON) may keep the result by identity.
 */
const registry = new WeakSet<object>();

function deepFreeze(value: unknown): void {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
}

/** Deep-freezes `value` and registers it as immutable; returns it. */
export function markImmutable<T extends object>(value: T): T {
  deepFreeze(value);
  registry.add(value);
  return value;
}

/** Whether `value` was registered with `markImmutable` (and so, with everything in it, can never change). */
export function isImmutable(value: object): boolean {
  return registry.has(value);
}
