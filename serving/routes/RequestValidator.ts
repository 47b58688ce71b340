/**
 * Request validation compiled once per route from the registry's JSON Schemas, on the one Ajv (common/validation.ts).
 * Path, query and header values arrive as strings: where a property's schema (or one of its anyOf/oneOf branches)
 * wants only a number, or only a boolean, a string that reads as one is converted before validation (limit=5 → 5);
 * anything else is left to the schema. Bodies are validated as sent. Failures are 400 VALIDATION with detail.reason
 * REQUEST_VALIDATION_FAILED and detail.field naming the path, e.g. '/query/limit'.
 */
import type { ErrorObject, ValidateFunction } from 'ajv'
import { ServiceError } from '../../common/ServiceError.ts'
import { compile } from '../../common/validation.ts'
import type { RouteDef } from './types.ts'

type Part = 'params' | 'query' | 'headers' | 'body'

/** A property of a flat part whose string value is read as a number or a boolean. */
interface Coercion {
  name: string
  to: 'number' | 'boolean'
}

/** The types one schema allows ([] when it does not say). */
function typesOf(schema: unknown): string[] {
  const type = (schema as { type?: unknown } | null)?.type
  return typeof type === 'string' ? [type] : Array.isArray(type) ? type.filter((t): t is string => typeof t === 'string') : []
}

/** What a property's string value should be read as: the property itself or any branch allows only that type. */
function targetOf(property: unknown): Coercion['to'] | null {
  if (typesOf(property).includes('string')) return null
  const p = property as { anyOf?: unknown[]; oneOf?: unknown[] } | null
  const alternatives = [property, ...(p?.anyOf ?? []), ...(p?.oneOf ?? [])].map(typesOf).map((ts) => ts.filter((t) => t !== 'null'))
  if (alternatives.some((ts) => ts.length > 0 && ts.every((t) => t === 'number' || t === 'integer'))) return 'number'
  if (alternatives.some((ts) => ts.length > 0 && ts.every((t) => t === 'boolean'))) return 'boolean'
  return null
}

/** The conversions a flat part's schema asks for, or null when every property takes the string as it is. */
function coercionsOf(schema: object): Coercion[] | null {
  const properties = (schema as { properties?: Record<string, unknown> }).properties ?? {}
  const out: Coercion[] = []
  for (const [name, property] of Object.entries(properties)) {
    const to = targetOf(property)
    if (to) out.push({ name, to })
  }
  return out.length > 0 ? out : null
}

/** Converts in place, as Ajv's coerceTypes would: a numeric string to its number, 'true'/'false' to booleans. */
function coerce(value: unknown, coercions: readonly Coercion[]): void {
  if (typeof value !== 'object' || value === null) return
  const o = value as Record<string, unknown>
  for (let i = 0; i < coercions.length; i++) {
    const { name, to } = coercions[i]!
    const v = o[name]
    if (typeof v !== 'string') continue
    if (to === 'number') {
      const n = Number(v)
      if (v !== '' && !Number.isNaN(n)) o[name] = n
    } else if (v === 'true' || v === 'false') o[name] = v === 'true'
  }
}

function fieldOf(part: Part, e: ErrorObject): string {
  let path = `/${part}${e.instancePath}`
  if (e.keyword === 'required') path += `/${String(e.params.missingProperty)}`
  else if (e.keyword === 'additionalProperties') path += `/${String(e.params.additionalProperty)}`
  return path
}

interface CheckedPart {
  part: Part
  validate: ValidateFunction
  coercions: Coercion[] | null
}

export class RequestValidator {
  private readonly parts: CheckedPart[] = []

  constructor(route: RouteDef) {
    const r = route.request
    for (const part of ['params', 'query', 'headers'] as const) {
      const schema = r[part]
      if (schema) this.parts.push({ part, validate: compile(schema), coercions: coercionsOf(schema) })
    }
    if (r.body) this.parts.push({ part: 'body', validate: compile(r.body), coercions: null })
  }

  /** True when the route declares no request schema: nothing to check. */
  get empty(): boolean {
    return this.parts.length === 0
  }

  /** Validates (and coerces/defaults in place); throws 400 VALIDATION naming the first failing field. */
  check(req: Record<Part, unknown>): void {
    for (let i = 0; i < this.parts.length; i++) {
      const { part, validate, coercions } = this.parts[i]!
      const value = req[part]
      if (coercions) coerce(value, coercions)
      if (validate(value)) continue
      const e = validate.errors?.[0]
      const field = e ? fieldOf(part, e) : `/${part}`
      throw new ServiceError('VALIDATION', {
        message: `${field} ${e?.message ?? 'is invalid'}`,
        detail: { reason: 'REQUEST_VALIDATION_FAILED', field, rule: e?.keyword ?? null },
      })
    }
  }
}
