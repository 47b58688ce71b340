/**
 * Compiles the registry's path templates into a matcher. Static paths are one Map lookup; templated paths are
 * matched segment by segment with static segments preferred over parameters (so /v1/decisions/latest wins over
 * /v1/decisions/{decision_id}). A known path with another method is 405 with Allow; anything else is 404.
 */
import type { RouteDef } from './types.ts'

export type RouteMatch =
  | { kind: 'found'; route: RouteDef; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allow: string }
  | { kind: 'not_found' }
  | { kind: 'bad_path' }

/** One segment after a template's prefix: a literal (param null) or a parameter (literal ''). One shape for all. */
interface Step {
  literal: string
  param: string | null
}

interface Template {
  segments: Array<{ literal: string } | { param: string }>
  /** The literal text up to the first parameter ('/v1/decisions/'): most templates are ruled out by it alone. */
  prefix: string
  /** The segments from the first parameter on. */
  steps: Step[]
  byMethod: Map<string, RouteDef>
  allow: string
}

function allowOf(methods: Iterable<string>): string {
  const set = new Set(methods)
  if (set.has('GET')) set.add('HEAD')
  return [...set].sort().join(', ')
}

export class Router {
  private readonly statics = new Map<string, { byMethod: Map<string, RouteDef>; allow: string }>()
  /** Lengths of the static paths: a path of any other length skips the Map lookup and the hashing of its text. */
  private readonly staticLengths = new Set<number>()
  private readonly templates: Template[] = []

  constructor(routes: readonly RouteDef[]) {
    const byPath = new Map<string, Map<string, RouteDef>>()
    for (const r of routes) {
      const m = byPath.get(r.path) ?? new Map<string, RouteDef>()
      if (m.has(r.method)) throw new Error(`duplicate route ${r.method} ${r.path}`)
      m.set(r.method, r)
      byPath.set(r.path, m)
    }
    for (const [path, byMethod] of byPath) {
      const allow = allowOf(byMethod.keys())
      if (!path.includes('{')) {
        this.statics.set(path, { byMethod, allow })
        this.staticLengths.add(path.length)
        continue
      }
      const segments = path.split('/').slice(1).map((s) => {
        const m = /^\{([a-z_]+)\}$/.exec(s)
        if (s.includes('{') && !m) throw new Error(`bad template segment '${s}' in ${path}`)
        return m ? { param: m[1] as string } : { literal: s }
      }) as Array<{ literal: string } | { param: string }>
      const firstParam = segments.findIndex((x) => 'param' in x)
      const steps = segments.slice(firstParam).map((x): Step => ('param' in x ? { literal: '', param: x.param } : { literal: (x as { literal: string }).literal, param: null }))
      this.templates.push({ segments, prefix: path.slice(0, path.indexOf('{')), steps, byMethod, allow })
    }
    // Most specific first: compare segment-wise, literal before parameter.
    this.templates.sort((a, b) => {
      const n = Math.max(a.segments.length, b.segments.length)
      for (let i = 0; i < n; i++) {
        const sa = a.segments[i]
        const sb = b.segments[i]
        if (!sa || !sb) return a.segments.length - b.segments.length
        const la = 'literal' in sa
        const lb = 'literal' in sb
        if (la !== lb) return la ? -1 : 1
      }
      return 0
    })
  }

  match(method: string, rawPath: string): RouteMatch {
    const path = rawPath.length > 1 && rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath
    const lookup = method === 'HEAD' ? 'GET' : method
    const hit = this.staticLengths.has(path.length) ? this.statics.get(path) : undefined
    if (hit) {
      const route = hit.byMethod.get(lookup)
      return route ? { kind: 'found', route, params: {} } : { kind: 'method_not_allowed', allow: hit.allow }
    }
    // Segments are walked in place (startsWith, indexOf) rather than split into an array per request; the literal
    // prefix rules most templates out before any segment is looked at.
    let allow: string | null = null
    for (const t of this.templates) {
      if (!path.startsWith(t.prefix)) continue
      let params: Record<string, string> | null = {}
      let pos = t.prefix.length
      const steps = t.steps
      for (let i = 0; i < steps.length; i++) {
        const step = steps[i] as Step
        const last = i === steps.length - 1
        const slash = path.indexOf('/', pos)
        // The last segment runs to the end of the path; every other one ends at a slash.
        if (last !== (slash === -1)) {
          params = null
          break
        }
        const end = last ? path.length : slash
        if (step.param === null) {
          if (end - pos !== step.literal.length || !path.startsWith(step.literal, pos)) {
            params = null
            break
          }
        } else {
          if (end === pos) {
            params = null
            break
          }
          const part = path.slice(pos, end)
          let value = part
          if (part.includes('%')) {
            try {
              value = decodeURIComponent(part)
            } catch {
              return { kind: 'bad_path' }
            }
          }
          params[step.param] = value
        }
        pos = end + 1
      }
      if (!params) continue
      const route = t.byMethod.get(lookup)
      if (route) return { kind: 'found', route, params }
      allow ??= t.allow
    }
    return allow ? { kind: 'method_not_allowed', allow } : { kind: 'not_found' }
  }

}
