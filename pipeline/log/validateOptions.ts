/** Options objects of the log layer are validated once, by JSON Schema, with errors naming the field path. */
import { Ajv, type ErrorObject, type JSONSchemaType } from 'ajv'
import { LogError } from './LogError.ts'

const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: false })

function describe(error: ErrorObject, root: string): string {
  const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.')
  const field =
    error.keyword === 'additionalProperties'
      ? [root, path, (error.params as { additionalProperty: string }).additionalProperty].filter(Boolean).join('.')
      : error.keyword === 'required'
        ? [root, path, (error.params as { missingProperty: string }).missingProperty].filter(Boolean).join('.')
        : [root, path].filter(Boolean).join('.')
  return `${field}: ${error.keyword === 'additionalProperties' ? 'is not a known option' : error.message ?? 'is invalid'}`
}

/** Compiles `schema`; the returned function returns a validated copy (defaults applied) or throws LOG_CONFIG. */
export function optionsValidator<T>(schema: JSONSchemaType<T>, root: string): (value: unknown) => T {
  const validate = ajv.compile(schema)
  return (value: unknown): T => {
    const copy: unknown = value === undefined ? {} : structuredClone(value)
    if (!validate(copy)) {
      const messages = (validate.errors ?? []).map((e) => describe(e, root))
      throw new LogError('LOG_CONFIG', `invalid ${root}: ${messages.join('; ')}`)
    }
    return copy
  }
}
