/**
 * One base for every error thrown on purpose (common/CodedError.ts): a closed code, `retryable` from the class's code
 * table (or the throw's own rule), the cause kept, `name` the class name. No class extends Error directly.
 */
import t from 'tap'
import { CodedError } from '../../common/CodedError.ts'
import { ERRORS } from '../../common/errors.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import { HyperliquidError } from '../../ingest/hyperliquid/HyperliquidError.ts'
import { CoinGeckoError } from '../../ingest/coingecko/CoinGeckoClient.ts'
import { WalletProviderError } from '../../ingest/wallet/WalletProviderError.ts'
import { LogError } from '../../pipeline/log/LogError.ts'
import { EngineError } from '../../engine/EngineError.ts'
import { FacilitatorError } from '../../serving/payments/x402/FacilitatorError.ts'
import { UsageError } from '../../cli/Command.ts'
import { sourceTexts } from '../helpers/sources.ts'

/** Being rewritten elsewhere (journal records); it moves onto CodedError with that change. */
const PENDING = ['pipeline/records/LedgerRecordError.ts']

t.test('every error class sits on CodedError and declares its code table', async (t) => {
  const classes: string[] = []
  for (const [file, text] of await sourceTexts()) {
    for (const m of text.matchAll(/class (\w+)(?:<[^>]*>)? extends (\w+)\b/g)) {
      const [, name, base] = m
      if (/^(Error|TypeError|RangeError|SyntaxError)$/.test(base!)) {
        if (file === 'common/CodedError.ts' || PENDING.includes(file)) continue
        t.fail(`${file}: ${name} extends ${base}; extend CodedError with a code table`)
      }
      if (base === 'CodedError') {
        classes.push(name!)
        // The wire error's table is the one registry, ERRORS (status, retryable, message), checked in test/serving.
        if (name === 'ServiceError') continue
        const body = text.slice(m.index)
        t.match(body, /static override readonly codes = /, `${file}: ${name} declares its code table`)
      }
    }
  }
  t.ok(classes.length >= 14, `${classes.length} error classes found`)
})

t.test('retryable comes from the table, or from the rule of the throw', async (t) => {
  t.equal(new LogError('LOG_LOCKED', 'held').retryable, true)
  t.equal(new LogError('LOG_CORRUPT', 'bad').retryable, false)
  t.equal(new LogError('LOG_IO', 'join timed out', { retryable: true }).retryable, true, 'a throw may override')
  t.equal(new HyperliquidError('HL_HTTP_STATUS', 'busy', { status: 429 }).retryable, true)
  t.equal(new HyperliquidError('HL_HTTP_STATUS', 'bad request', { status: 422 }).retryable, false)
  t.equal(new HyperliquidError('HL_TIMEOUT', 'slow').retryable, true)
  t.equal(new CoinGeckoError('CG_HTTP_STATUS', 'down', { status: 503 }).retryable, true)
  t.equal(new CoinGeckoError('CG_BAD_RESPONSE', 'odd').retryable, false)
  t.equal(new FacilitatorError('http', 'settle', 'HTTP 502', 502).retryable, true)
  t.equal(new FacilitatorError('protocol', 'verify', 'no isValid').retryable, false)
  t.equal(new WalletProviderError('none', 'unwired', 'no provider').retryable, false)
  t.equal(new WalletProviderError('hyperliquid', 'timeout', 'slow').retryable, true)
  t.equal(new EngineError('CLOCK_OPEN', 'open').retryable, true)
  t.equal(new UsageError('missing --tape').retryable, false)
  for (const code of ['VALIDATION', 'CLOCK_OPEN', 'RATE_LIMITED', 'PROVIDER_DOWN'] as const) {
    t.equal(new ServiceError(code).retryable, ERRORS[code].retryable, `ServiceError ${code} as registered`)
  }
})

t.test('code, name, message and cause', async (t) => {
  const cause = new Error('ECONNRESET')
  const err = new HyperliquidError('HL_UNREACHABLE', 'api.hyperliquid.xyz unreachable', { request: 'l2Book', cause })
  t.ok(err instanceof CodedError && err instanceof Error)
  t.match(err, { name: 'HyperliquidError', code: 'HL_UNREACHABLE', message: 'api.hyperliquid.xyz unreachable', request: 'l2Book', status: null, path: null })
  t.equal(err.cause, cause)
  t.notOk('cause' in new UsageError('x'), 'no cause unless given')
  const se = new ServiceError('PROVIDER_DOWN', { detail: { reason: 'SERVICE_UNWIRED', missing: 'engine' } })
  t.match(se, { name: 'ServiceError', code: 'PROVIDER_DOWN', status: 503, retryable: true, retryAfterMs: null, headers: {} })
  t.same(se.toEnvelope('r1').error.detail, { reason: 'SERVICE_UNWIRED', missing: 'engine' })
  t.same(new ServiceError('INTERNAL').toEnvelope('r2').error.detail, { reason: 'INTERNAL' }, 'the code repeats without a reason')
})
