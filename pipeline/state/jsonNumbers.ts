/**
 * JSON has no NaN, ±Infinity or −0, and a state snapshot must give back the very numbers it was written from (a NaN
 * depth, a −Infinity "nothing yet" marker). encodeNumbers() replaces each such number, anywhere in a JSON-safe value,
 * by the marker object {"#": "NaN" | "Infinity" | "-Infinity" | "-0"}; decodeNumbers() turns the markers back. State
 * rows never hold an object whose only key is "#", so the marker cannot collide with a value.
 */
const TOKENS: Record<string, number> = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity, '-0': -0 }

function token(n: number): string | null {
  if (Number.isNaN(n)) return 'NaN'
  if (n === Infinity) return 'Infinity'
  if (n === -Infinity) return '-Infinity'
  if (n === 0 && Object.is(n, -0)) return '-0'
  return null
}

export function encodeNumbers(value: unknown): unknown {
  if (typeof value === 'number') {
    const t = token(value)
    return t === null ? value : { '#': t }
  }
  if (Array.isArray(value)) {
    // Series columns are long number arrays: copy only when one of them needs a marker.
    let out: unknown[] | null = null
    for (let i = 0; i < value.length; i++) {
      const v = value[i]
      const e = typeof v === 'number' && token(v) === null ? v : encodeNumbers(v)
      if (e !== v && out === null) out = value.slice(0, i)
      if (out !== null) out.push(e)
    }
    return out ?? value
  }
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, encodeNumbers(v)]))
  return value
}

export function decodeNumbers(value: unknown): unknown {
  if (Array.isArray(value)) {
    let out: unknown[] | null = null
    for (let i = 0; i < value.length; i++) {
      const v = value[i]
      const d = typeof v === 'number' ? v : decodeNumbers(v)
      if (d !== v && out === null) out = value.slice(0, i)
      if (out !== null) out.push(d)
    }
    return out ?? value
  }
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value)
    if (keys.length === 1 && keys[0] === '#') {
      const t = (value as { '#': unknown })['#']
      if (typeof t !== 'string' || !(t in TOKENS)) throw new Error(`unknown number marker ${JSON.stringify(t)}`)
      return TOKENS[t]
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decodeNumbers(v)]))
  }
  return value
}
