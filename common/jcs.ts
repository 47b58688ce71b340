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
  return serialize(value, [], new Set())
}

/**
 * The JSONPath-like location of a failure ('$.a[1]'), built only when one is thrown: every ledger record is
 * canonicalised on the paid path, so the walk keeps a stack of keys rather than a string per member.
 */
type Path = Array<string | number>

function pathText(path: Path): string {
  let out = '$'
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : `.${p}`
  return out
}

/**
 * Lone surrogates are not I-JSON (RFC 7493 §2.1). String.prototype.isWellFormed (ES2024) checks it natively; every
 * Node this runs on (engines: >= 20) has it, only TypeScript's ES2022 lib does not declare it.
 */
export function isWellFormed(s: string): boolean {
  return (s as string & { isWellFormed(): boolean }).isWellFormed()
}

function serializeString(s: string, path: Path): string {
  if (!isWellFormed(s)) throw new TypeError(`${pathText(path)}: lone surrogate is not allowed in I-JSON`)
  return JSON.stringify(s)
}

function serialize(value: unknown, path: Path, seen: Set<object>): string {
  if (value === null) return 'null'
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false'
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`${pathText(path)}: ${value} is not a JSON number`)
      return JSON.stringify(value) // ECMAScript Number::toString; -0 → "0"
    case 'string':
      return serializeString(value, path)
    case 'object':
      break
    default:
      throw new TypeError(`${pathText(path)}: ${typeof value} is not JSON`)
  }
  const obj = value as Record<string, unknown> & { toJSON?: unknown }
  if (typeof obj.toJSON === 'function') return serialize((obj.toJSON as () => unknown)(), path, seen)
  if (seen.has(obj)) throw new TypeError(`${pathText(path)}: circular reference`)
  seen.add(obj)
  let out: string
  if (Array.isArray(obj)) {
    out = '['
    for (let i = 0; i < obj.length; i++) {
      path.push(i)
      out += (i === 0 ? '' : ',') + serialize(obj[i], path, seen)
      path.pop()
    }
    out += ']'
  } else {
    const proto = Object.getPrototypeOf(obj)
    if (proto !== Object.prototype && proto !== null) {
      throw new TypeError(`${pathText(path)}: ${proto?.constructor?.name ?? 'non-plain'} object is not JSON`)
    }
    // Array.prototype.sort without a comparator orders strings by UTF-16 code units, as §3.2.3 requires.
    const keys = Object.keys(obj).sort()
    out = '{'
    let first = true
    for (const key of keys) {
      const member = obj[key]
      if (member === undefined) continue
      const name = serializeString(key, path)
      path.push(key)
      out += (first ? '' : ',') + name + ':' + serialize(member, path, seen)
      path.pop()
      first = false
    }
    out += '}'
  }
  seen.delete(obj)
  return out
}
