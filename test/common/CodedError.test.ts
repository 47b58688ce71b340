/**
 * One base for every error thrown on purpose (common/CodedError.ts): a closed code, `retryable` from the class's code
 * table (or the throw's own rule), the cause kept, `name` the class name. No class extends Error directly.
 */
import t from 'tap'
import { CodedError, codedError } from '../../common/CodedError.ts'
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
const PENDING: string[] = []

t.test('every error class sits on CodedError with its code table', async (t) => {
  const tabled: string[] = []
  for (const [file, text] of await sourceTexts()) {
    for (const [, name, base] of text.matchAll(/class (\w+)(?:<[^>]*>)? extends (\w+)\b/g)) {
      if (/^(Error|TypeError|RangeError|SyntaxError)$/.test(base!) && file !== 'common/CodedError.ts' && !PENDING.includes(file)) {
        t.fail(`${file}: ${name} extends ${base}; extend codedError(<its code table>)`)
      }
      // The wire error's table is the one registry, ERRORS (status, retryable, message), checked in test/serving.
      if (base === 'CodedError' && name !== 'ServiceError') t.fail(`${file}: ${name} extends CodedError without a code table; use codedError(table)`)
      if (base === 'codedError' && file !== 'common/CodedError.ts') tabled.push(name!)
    }
  }
  t.ok(tabled.length >= 13, `${tabled.length} stage error classes on codedError(table): ${tabled.join(', ')}`)
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
  class ProbeError extends codedError({ PROBE_BUSY: { retryable: true, meaning: 'a probe' }, PROBE_BAD: { retryable: false, meaning: 'a probe' } }) {}
  t.match(new ProbeError('PROBE_BUSY', 'busy'), { name: 'ProbeError', code: 'PROBE_BUSY', retryable: true, message: 'busy' })
  t.equal(new ProbeError('PROBE_BAD', 'bad').retryable, false)
  t.same(Object.keys(ProbeError.codes), ['PROBE_BUSY', 'PROBE_BAD'], 'the table is on the class')
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
