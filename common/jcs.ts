/**
 * Canonical JSON, RFC 8785 (JSON Canonicalization Scheme).
 *
 * Spec, Claim checker: "recomputes the id with a canonical JSON (JCS) SHA-256 scheme"; Policy seal: "the checksum is
 * recomputable from the body". RFC 8785 §3.2: no whitespace; object members sorted by their names as arrays of UTF-16
 * code units (§3.2.3); strings escaped as ECMAScript JSON.stringify does (§3.2.2.2); numbers serialised by the
 * ECMAScript Number-to-String algorithm (§3.2.2.3), which rejects NaN and ±Infinity; input must be I-JSON (RFC 7493),
 * so lone surrogates are rejected.
 *
 * Value handling beyond plain JSON follows JSON.stringify, so a value canonicalises to the same text before and after a
 * JSON round trip: `toJSON()` is honoured (Date → ISO string), object members whose value is undefined are omitted.
 * Everything else that JSON cannot carry (undefined elsewhere, functions, symbols, bigint, Map/Set and other non-plain
 * objects, cycles) throws a TypeError rather than being silently dropped or rewritten.
 */

export function canonicalJson(value: unknown): string {
  return serialize(value, '$', new Set())
}

function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1)
      if (!(next >= 0xdc00 && next <= 0xdfff)) return true
      i++
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return true
    }
  }
  return false
}

function serializeString(s: string, path: string): string {
  if (hasLoneSurrogate(s)) throw new TypeError(`${path}: lone surrogate is not allowed in I-JSON`)
  return JSON.stringify(s)
}

function serialize(value: unknown, path: string, seen: Set<object>): string {
  if (value === null) return 'null'
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false'
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`${path}: ${value} is not a JSON number`)
      return JSON.stringify(value) // ECMAScript Number::toString; -0 → "0"
    case 'string':
      return serializeString(value, path)
    case 'object':
      break
    default:
      throw new TypeError(`${path}: ${typeof value} is not JSON`)
  }
  const obj = value as Record<string, unknown> & { toJSON?: unknown }
  if (typeof obj.toJSON === 'function') return serialize((obj.toJSON as () => unknown)(), path, seen)
  if (seen.has(obj)) throw new TypeError(`${path}: circular reference`)
  seen.add(obj)
  let out: string
  if (Array.isArray(obj)) {
    out = `[${obj.map((item, i) => serialize(item, `${path}[${i}]`, seen)).join(',')}]`
  } else {
    const proto = Object.getPrototypeOf(obj)
    if (proto !== Object.prototype && proto !== null) {
      throw new TypeError(`${path}: ${proto?.constructor?.name ?? 'non-plain'} object is not JSON`)
    }
    // Array.prototype.sort without a comparator orders strings by UTF-16 code units, as §3.2.3 requires.
    const keys = Object.keys(obj).sort()
    const parts: string[] = []
    for (const key of keys) {
      const member = obj[key]
      if (member === undefined) continue
      parts.push(`${serializeString(key, path)}:${serialize(member, `${path}.${key}`, seen)}`)
    }
    out = `{${parts.join(',')}}`
  }
  seen.delete(obj)
  return out
}
