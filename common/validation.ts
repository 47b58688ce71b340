/**
 * The one JSON Schema validator of the code base and its one error format.
 *
 * Every schema (options objects, configuration, log records, request parts) compiles on this Ajv instance; every
 * failure names the offending field as a JSON pointer under a root label, in one format:
 *
 *   <root>/<path>: <message>          e.g.  ParquetSink options/maxRows: must be >= 1
 *
 * A missing required field names the field (`.../ref: is required`), an unknown one names itself (`.../bogus: is not
 * a known field`). Defaults in a schema are applied to the validated copy.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import { codedError } from './CodedError.ts'

/**
 * allErrors: a configuration with three bad variables names all three in one message. strict off: TypeBox and
 * OpenAPI annotations (description, examples) sit beside the keywords.
 */
export const ajv = new Ajv({ allErrors: true, strict: false, useDefaults: true, allowUnionTypes: true })
addFormats.default(ajv)

const compiled = new WeakMap<object, ValidateFunction>()

/** Compiles once per schema object (the same object always returns the same function). */
export function compile<T = unknown>(schema: object): ValidateFunction<T> {
  let validate = compiled.get(schema)
  if (!validate) {
    validate = ajv.compile(schema)
    compiled.set(schema, validate)
  }
  return validate as ValidateFunction<T>
}

/** One failure: the field as a JSON pointer under the validated value, and what is wrong with it. */
export interface FieldError {
  /** JSON pointer, e.g. '/maxRows' or '/body/candidate/tx_hash' ('' = the value itself). */
  path: string
  message: string
  /** The JSON Schema keyword that failed (required, type, minimum, ...). */
  keyword: string
}

export function fieldError(e: ErrorObject): FieldError {
  if (e.keyword === 'required') return { path: `${e.instancePath}/${String(e.params.missingProperty)}`, message: 'is required', keyword: e.keyword }
  if (e.keyword === 'additionalProperties') {
    return { path: `${e.instancePath}/${String(e.params.additionalProperty)}`, message: 'is not a known field', keyword: e.keyword }
  }
  if (e.keyword === 'enum') {
    const allowed = (e.params.allowedValues as unknown[]).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')
    return { path: e.instancePath, message: `${e.message ?? 'is not allowed'} (${allowed})`, keyword: e.keyword }
  }
  return { path: e.instancePath, message: e.message ?? 'is invalid', keyword: e.keyword }
}

/**
 * A schema may say in words what its pattern admits (`'x-expected': 'all, off, or a share such as 0.1'`): a person
 * reads "must be all, off, or …", not a regular expression. The words sit beside the pattern, so they are found from
 * the error's schemaPath in the compiled root schema.
 */
export const EXPECTED = 'x-expected'

function expectedWords(root: unknown, schemaPath: string): string | null {
  let node = root as Record<string, unknown> | undefined
  const parts = schemaPath.replace(/^#\/?/, '').split('/').slice(0, -1) // the last part is the keyword itself
  for (const part of parts) {
    if (node === undefined || node === null || typeof node !== 'object') return null
    node = node[part.replace(/~1/g, '/').replace(/~0/g, '~')] as Record<string, unknown> | undefined
  }
  const words = node?.[EXPECTED]
  return typeof words === 'string' ? words : null
}

/** The failures of the last call of `validate`, most specific first and without duplicates. */
export function fieldErrors(validate: ValidateFunction): FieldError[] {
  const out: FieldError[] = []
  const seen = new Set<string>()
  for (const e of validate.errors ?? []) {
    // anyOf/oneOf/if report themselves after their branches: the branch errors say more.
    if ((e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') && out.some((f) => f.path.startsWith(e.instancePath))) continue
    const words = e.keyword === 'pattern' ? expectedWords(validate.schema, e.schemaPath) : null
    const f = words === null ? fieldError(e) : { path: e.instancePath, message: `must be ${words}`, keyword: e.keyword }
    const key = `${f.path}\n${f.message}`
    if (!seen.has(key)) {
      seen.add(key)
      out.push(f)
    }
  }
  return out
}

/** `root/path: message; root/path: message` (the one format). */
export function describeFieldErrors(root: string, errors: readonly FieldError[]): string {
  return errors.map((e) => `${root}${e.path}: ${e.message}`).join('; ')
}

/** Options, configuration or a record that failed its schema. */
export class OptionsError extends codedError({
  OPTIONS_INVALID: { retryable: false, meaning: 'an options object, configuration or record failed its schema; the message names each field' },
}) {
  constructor(
    readonly root: string,
    readonly errors: readonly FieldError[],
  ) {
    super('OPTIONS_INVALID', describeFieldErrors(root, errors))
  }

  /** One failure found by a check the schema cannot express (a function, an instance, a calendar rule). */
  static at(root: string, path: string, message: string): OptionsError {
    return new OptionsError(root, [{ path, message, keyword: 'check' }])
  }

  /** JSON pointer of the first failure. */
  get path(): string {
    return this.errors[0]?.path ?? ''
  }
}

/** Builds a stage's own error (e.g. LogError LOG_CONFIG) from the one-format message and the failures. */
export type ToError = (message: string, errors: readonly FieldError[]) => Error

function failure(validate: ValidateFunction, root: string, toError: ToError | undefined): Error {
  const errors = fieldErrors(validate)
  return toError ? toError(describeFieldErrors(root, errors), errors) : new OptionsError(root, errors)
}

/**
 * A validator for an options object: returns a validated copy with the schema's defaults applied, or throws. The
 * error is an OptionsError unless the stage passes its own (e.g. LogError LOG_CONFIG), built from the same message.
 */
export function optionsValidator<T>(schema: object, root: string, toError?: ToError): (value: unknown) => T {
  const validate = compile(schema)
  return (value: unknown): T => {
    const copy: unknown = value === undefined ? {} : structuredClone(value)
    if (!validate(copy)) throw failure(validate, root, toError)
    return copy as T
  }
}

/**
 * Validates `value` in place (no copy, so it may hold functions and instances; defaults are applied to it) and returns
 * it typed, or throws an OptionsError (or the stage's own error).
 */
export function validateOptions<T>(root: string, schema: object, value: unknown, toError?: ToError): T {
  const validate = compile(schema)
  if (!validate(value)) throw failure(validate, root, toError)
  return value as T
}
