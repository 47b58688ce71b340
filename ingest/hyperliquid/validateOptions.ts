/**
 * Options objects of the Hyperliquid adapter are validated once, at construction, by JSON Schema; the error
 * names the offending field path (e.g. `HyperliquidStream options/backoffBaseMs: must be >= 1`).
 */
import { Ajv, type ValidateFunction } from 'ajv'

const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: false })
const compiled = new WeakMap<object, ValidateFunction>()

export class OptionsError extends TypeError {
  override name = 'OptionsError'
  readonly path: string
  constructor(label: string, path: string, message: string) {
    super(`${label} options${path}: ${message}`)
    this.path = path
  }
}

export function validateOptions<T>(label: string, schema: object, value: unknown): T {
  let validate = compiled.get(schema)
  if (!validate) {
    validate = ajv.compile(schema)
    compiled.set(schema, validate)
  }
  if (!validate(value)) {
    const err = validate.errors?.[0]
    const missing = err?.keyword === 'required' ? `/${String(err.params.missingProperty)}` : ''
    const extra = err?.keyword === 'additionalProperties' ? `/${String(err.params.additionalProperty)}` : ''
    throw new OptionsError(label, `${err?.instancePath ?? ''}${missing}${extra}`, err?.message ?? 'invalid')
  }
  return value as T
}
