/**
 * A strict parser of the Prometheus text exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/
 * exposition_formats/), for tests that scrape /metrics: it throws on any line it does not understand, on a sample
 * before its family's # TYPE, on a duplicate TYPE or series, on a bad name or label, and on a value that is not a Go
 * float. Histogram and summary samples (_bucket, _sum, _count) belong to the family without the suffix.
 */

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

export interface Family {
  name: string
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped'
  help: string | null
  samples: Sample[]
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped'])

/** A Go float as Prometheus reads it (strconv.ParseFloat: Inf and NaN in any case; prom-client writes NaN as 'Nan'). */
function parseValue(text: string, line: string): number {
  if (/^\+?inf(inity)?$/i.test(text)) return Infinity
  if (/^-inf(inity)?$/i.test(text)) return -Infinity
  if (/^nan$/i.test(text)) return NaN
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`bad value '${text}' in: ${line}`)
  return Number(text)
}

/** Labels from just after '{' to the matching '}'; returns them and the index after '}'. */
function parseLabels(line: string, from: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {}
  let i = from
  for (;;) {
    if (line[i] === '}') return { labels, end: i + 1 }
    const eq = line.indexOf('=', i)
    if (eq < 0) throw new Error(`label without '=' in: ${line}`)
    const name = line.slice(i, eq).trim()
    if (!LABEL_NAME.test(name)) throw new Error(`bad label name '${name}' in: ${line}`)
    if (name in labels) throw new Error(`duplicate label ${name} in: ${line}`)
    if (line[eq + 1] !== '"') throw new Error(`unquoted label value in: ${line}`)
    let value = ''
    let j = eq + 2
    for (; j < line.length && line[j] !== '"'; j++) {
      if (line[j] === '\\') {
        const next = line[++j]
        if (next === 'n') value += '\n'
        else if (next === '\\' || next === '"') value += next
        else throw new Error(`bad escape \\${next} in: ${line}`)
      } else value += line[j]
    }
    if (j >= line.length) throw new Error(`unterminated label value in: ${line}`)
    labels[name] = value
    i = j + 1
    if (line[i] === ',') i++
    else if (line[i] !== '}') throw new Error(`expected ',' or '}' after label ${name} in: ${line}`)
  }
}

function familyOf(sample: string, families: Map<string, Family>): Family | undefined {
  const own = families.get(sample)
  if (own) return own
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!sample.endsWith(suffix)) continue
    const f = families.get(sample.slice(0, -suffix.length))
    if (f && (f.type === 'histogram' || f.type === 'summary')) return f
  }
  return undefined
}

export function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a line feed')
  const families = new Map<string, Family>()
  const helps = new Map<string, string>()
  const seen = new Set<string>()
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line)
      if (!m) continue // a plain comment
      const [, kind, name, rest] = m as unknown as [string, string, string, string]
      if (!METRIC_NAME.test(name)) throw new Error(`bad metric name in: ${line}`)
      if (kind === 'HELP') {
        if (helps.has(name)) throw new Error(`second HELP for ${name}`)
        helps.set(name, rest.replace(/\\n/g, '\n').replace(/\\\\/g, '\\'))
        const f = families.get(name)
        if (f) f.help = helps.get(name)!
      } else {
        if (families.has(name)) throw new Error(`second TYPE for ${name}`)
        if (!TYPES.has(rest)) throw new Error(`unknown type '${rest}' for ${name}`)
        families.set(name, { name, type: rest as Family['type'], help: helps.get(name) ?? null, samples: [] })
      }
      continue
    }
    const nameEnd = line.search(/[{ ]/)
    if (nameEnd <= 0) throw new Error(`bad sample line: ${line}`)
    const name = line.slice(0, nameEnd)
    if (!METRIC_NAME.test(name)) throw new Error(`bad metric name in: ${line}`)
    let labels: Record<string, string> = {}
    let i = nameEnd
    if (line[i] === '{') ({ labels, end: i } = parseLabels(line, i + 1))
    if (line[i] !== ' ') throw new Error(`expected a space before the value in: ${line}`)
    const parts = line.slice(i + 1).trim().split(/\s+/)
    if (parts.length < 1 || parts.length > 2) throw new Error(`bad value part in: ${line}`)
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new Error(`bad timestamp in: ${line}`)
    const family = familyOf(name, families)
    if (!family) throw new Error(`sample before its # TYPE: ${line}`)
    const key = name + JSON.stringify(Object.entries(labels).sort())
    if (seen.has(key)) throw new Error(`duplicate series: ${line}`)
    seen.add(key)
    family.samples.push({ name, labels, value: parseValue(parts[0]!, line) })
  }
  return families
}

/** The value of one series (every given label must match; the series must be unique), or undefined. */
export function valueOf(families: Map<string, Family>, family: string, sample: string, labels: Record<string, string> = {}): number | undefined {
  const hits = (families.get(family)?.samples ?? []).filter((s) => s.name === sample && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  if (hits.length > 1) throw new Error(`${sample} ${JSON.stringify(labels)} matches ${hits.length} series`)
  return hits[0]?.value
}
