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
  try {
    return serializeFast(value, 0)
  } catch (err) {
    if (err !== NOT_FAST) throw err
    // Something the fast walk does not vouch for: the checked walk either writes the same text (a deep value) or
    // throws the TypeError naming where the value stops being JSON.
    return serialize(value, [], new Set())
  }
}

/**
 * Every ledger record, billing row and hashed journal is canonicalised on the paid path, so the common case (a shallow
 * value that is plain JSON) takes a walk with no path stack and no cycle set: it gives up (NOT_FAST) at anything
 * unusual or deeper than FAST_DEPTH (which a cycle reaches), and the checked walk below takes over.
 */
const NOT_FAST: unique symbol = Symbol('not-fast')
const FAST_DEPTH = 64

function serializeFast(value: unknown, depth: number): string {
  switch (typeof value) {
    case 'string':
      if (!isWellFormed(value)) throw NOT_FAST
      return JSON.stringify(value)
    case 'number':
      if (!Number.isFinite(value)) throw NOT_FAST
      return JSON.stringify(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'object':
      break
    default:
      throw NOT_FAST
  }
  if (value === null) return 'null'
  if (depth >= FAST_DEPTH) throw NOT_FAST
  if (Array.isArray(value)) {
    let out = '['
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + serializeFast(value[i], depth + 1)
    return out + ']'
  }
  if (Object.getPrototypeOf(value) !== Object.prototype || typeof (value as { toJSON?: unknown }).toJSON === 'function') throw NOT_FAST
  const obj = value as Record<string, unknown>
  const keys = Object.keys(obj)
  // Records are often built in a fixed order that is already sorted for nested parts: a linear check spares the sort.
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1]! > keys[i]!) {
      keys.sort()
      break
    }
  }
  let out = '{'
  let first = true
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!
    const member = obj[key]
    if (member === undefined) continue
    if (!isWellFormed(key)) throw NOT_FAST
    out += (first ? '"' : ',"') + (needsEscape(key) ? JSON.stringify(key).slice(1, -1) : key) + '":' + serializeFast(member, depth + 1)
    first = false
  }
  return out + '}'
}

/** A member name needs JSON escaping only for a quote, a backslash or a control character (RFC 8785 §3.2.2.2). */
const ESCAPED = /["\\\u0000-\u001f]/
function needsEscape(key: string): boolean {
  return ESCAPED.test(key)
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

/**
 * True when JSON.stringify(value) is already canonicalJson(value): plain JSON (finite numbers, well-formed strings,
 * plain objects and arrays, shallower than FAST_DEPTH) whose object members are in canonical order at every depth. A
 * record read back from a log (written canonical, parsed in order) passes, so a writer of many such records (a state
 * snapshot) checks the order, which is a walk over the keys, instead of re-serializing and re-parsing each one.
 */
export function isCanonicalOrder(value: unknown, depth = 0): boolean {
  switch (typeof value) {
    case 'string':
      return isWellFormed(value)
    case 'number':
      return Number.isFinite(value)
    case 'boolean':
      return true
    case 'object':
      break
    default:
      return false
  }
  if (value === null) return true
  if (depth >= FAST_DEPTH) return false
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!isCanonicalOrder(value[i], depth + 1)) return false
    return true
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return false
  const obj = value as Record<string, unknown>
  let previous: string | null = null
  for (const key in obj) {
    // Keys compare as UTF-16 code units with <, as RFC 8785 §3.2.3 sorts them; an undefined member would be dropped by
    // canonicalJson and JSON.stringify alike, but a record never holds one: refuse it rather than reason about it.
    if ((previous !== null && !(previous < key)) || !isWellFormed(key) || obj[key] === undefined) return false
    if (!isCanonicalOrder(obj[key], depth + 1)) return false
    previous = key
  }
  return true
}
