/**
 * The one JSON Schema validator (common/validation.ts): one Ajv instance for the code base, one error format
 * `<root><path>: <message>` naming the field as a JSON pointer, defaults applied, and a stage's own error when it asks.
 */
import t from 'tap'
import { StringEnum, Strict, Type } from '../../common/schema.ts'
import { OptionsError, compile, optionsValidator, validateOptions } from '../../common/validation.ts'
import { LogError } from '../../pipeline/log/LogError.ts'
import { sourceTexts } from '../helpers/sources.ts'

/**
 * Files that still construct their own Ajv while another change rewrites them (records on the journal, the one
 * configuration schema). Each entry must still hold one: an entry that no longer does fails too, so the list only
 * shrinks.
 */
const PENDING: string[] = []

/** A TypeBox options schema with defaults, an enum and a nested object. */
const OPTIONS = Strict({
  dataDir: Type.String({ minLength: 1 }),
  maxRows: Type.Optional(Type.Integer({ minimum: 1, default: 50_000 })),
  retry: Type.Optional(Strict({ attempts: Type.Optional(Type.Integer({ minimum: 0, default: 3 })), mode: Type.Optional(StringEnum(['fixed', 'backoff'])) })),
})

t.test('no Ajv instance outside common/validation.ts', async (t) => {
  const found = (await sourceTexts()).filter(([, text]) => /\bnew\s+Ajv\s*\(/.test(text)).map(([file]) => file)
  t.ok(found.includes('common/validation.ts'), 'the one instance is found by the scan')
  for (const file of found) {
    if (file !== 'common/validation.ts') t.ok(PENDING.includes(file), `${file} validates on common/validation.ts, not an Ajv of its own`)
  }
  for (const file of PENDING) t.ok(found.includes(file), `${file} is still pending; drop it from the list once it moved`)
})

t.test('one format: root, JSON pointer, message', async (t) => {
  const validate = optionsValidator(OPTIONS, 'ParquetSink options')
  t.throws(() => validate({}), { name: 'OptionsError', code: 'OPTIONS_INVALID', retryable: false, message: 'ParquetSink options/dataDir: is required', path: '/dataDir' })
  t.throws(() => validate({ dataDir: 'd', bogus: 1 }), { message: 'ParquetSink options/bogus: is not a known field' })
  t.throws(() => validate({ dataDir: 'd', maxRows: 0 }), { message: 'ParquetSink options/maxRows: must be >= 1' })
  t.throws(() => validate({ dataDir: 'd', retry: { attempts: -1 } }), { message: 'ParquetSink options/retry/attempts: must be >= 0' }, 'nested path')
  t.throws(() => validate({ dataDir: 'd', retry: { mode: 'random' } }), { message: 'ParquetSink options/retry/mode: must be equal to one of the allowed values (fixed, backoff)' })
  const err = t.throws(() => validate({ dataDir: '', maxRows: 1.5, extra: true })) as OptionsError
  t.same(err.errors.map((e) => e.path).sort(), ['/dataDir', '/extra', '/maxRows'], 'every failure is named, in one message')
  t.equal(err.message.split('; ').length, 3)
})

t.test('defaults are applied to a copy; validateOptions works in place', async (t) => {
  const given = { dataDir: 'd', retry: {} }
  const resolved = optionsValidator<{ dataDir: string; maxRows: number; retry: { attempts: number } }>(OPTIONS, 'X options')(given)
  t.same(resolved, { dataDir: 'd', maxRows: 50_000, retry: { attempts: 3 } })
  t.same(given, { dataDir: 'd', retry: {} }, 'the caller keeps its object')
  t.throws(() => optionsValidator(OPTIONS, 'X options')(undefined), { message: 'X options/dataDir: is required' }, 'no options at all reads as {}')

  const inPlace: Record<string, unknown> = { dataDir: 'd', onEvent: () => {} }
  t.throws(() => validateOptions('X options', OPTIONS, inPlace), { message: 'X options/onEvent: is not a known field' }, 'functions are fine in place')
  const ok = { dataDir: 'd' }
  t.equal(validateOptions('X options', OPTIONS, ok), ok)
  t.equal((ok as { maxRows?: number }).maxRows, 50_000, 'defaults land on the value itself')
})

t.test("a stage's own error, built from the same message", async (t) => {
  const validate = optionsValidator(OPTIONS, 'EmbeddedLog options', LogError.config)
  const err = t.throws(() => validate({ dataDir: 'd', maxRows: 0 }), { name: 'LogError', code: 'LOG_CONFIG', retryable: false, message: 'EmbeddedLog options/maxRows: must be >= 1' })
  t.notOk(err instanceof OptionsError)
  const seen: unknown[] = []
  t.throws(
    () =>
      validateOptions('Y options', OPTIONS, {}, (message, errors) => {
        seen.push(...errors)
        return new RangeError(message)
      }),
    RangeError,
  )
  t.same(seen, [{ path: '/dataDir', message: 'is required', keyword: 'required' }])
  t.throws(() => {
    throw OptionsError.at('Replay options', '/skip', 'must be a function')
  }, { message: 'Replay options/skip: must be a function', path: '/skip' })
})

t.test('TypeBox and plain JSON Schema compile on the one instance, once per schema object', async (t) => {
  const plain = { type: 'object', properties: { limit: { type: 'integer', minimum: 1 }, when: { type: 'string', format: 'date-time' } } }
  const validate = compile(plain)
  t.equal(compile(plain), validate, 'compiled once')
  t.ok(validate({ limit: 2, when: '2026-01-01T00:00:00Z' }))
  t.notOk(validate({ limit: 2, when: 'yesterday' }), 'formats are checked (ajv-formats)')
  t.ok(compile(OPTIONS)({ dataDir: 'd' }))
  t.notOk(compile(OPTIONS)({ dataDir: 'd', maxRows: 0 }))
})
