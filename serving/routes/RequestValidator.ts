/**
 * Request validation compiled once per route from the registry's JSON Schemas. Path and query values arrive as
 * strings and are coerced (limit=5 → 5); bodies are validated as sent. Failures are 400 VALIDATION with
 * detail.reason REQUEST_VALIDATION_FAILED and detail.field naming the path, e.g. '/query/limit'.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import { ServiceError } from '../../common/ServiceError.ts'
import type { RouteDef } from './types.ts'

type Part = 'params' | 'query' | 'headers' | 'body'

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: coerce, useDefaults: true, allowUnionTypes: true })
  addFormats.default(ajv)
  return ajv
}

const coercing = makeAjv(true)
const exact = makeAjv(false)

function fieldOf(part: Part, e: ErrorObject): string {
  let path = `/${part}${e.instancePath}`
  if (e.keyword === 'required') path += `/${String(e.params.missingProperty)}`
  else if (e.keyword === 'additionalProperties') path += `/${String(e.params.additionalProperty)}`
  return path
}

export class RequestValidator {
  private readonly parts: Array<[Part, ValidateFunction]> = []

  constructor(route: RouteDef) {
    const r = route.request
    if (r.params) this.parts.push(['params', coercing.compile(r.params)])
    if (r.query) this.parts.push(['query', coercing.compile(r.query)])
    if (r.headers) this.parts.push(['headers', coercing.compile(r.headers)])
    if (r.body) this.parts.push(['body', exact.compile(r.body)])
  }

  /** True when the route declares no request schema: nothing to check. */
  get empty(): boolean {
    return this.parts.length === 0
  }

  /** Validates (and coerces/defaults in place); throws 400 VALIDATION naming the first failing field. */
  check(req: Record<Part, unknown>): void {
    for (const [part, validate] of this.parts) {
      if (validate(req[part])) continue
      const e = validate.errors?.[0]
      const field = e ? fieldOf(part, e) : `/${part}`
      throw new ServiceError('VALIDATION', {
        message: `${field} ${e?.message ?? 'is invalid'}`,
        detail: { reason: 'REQUEST_VALIDATION_FAILED', field, rule: e?.keyword ?? null },
      })
    }
  }
}
