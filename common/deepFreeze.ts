/**
 * Freezes a JSON-like value and everything it holds. Serving treats a frozen value as immutable and serializes it
 * once (serving/envelope.ts jsonOf); freeze only values that are never changed afterwards.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const v of Object.values(value)) deepFreeze(v)
  }
  return value
}
