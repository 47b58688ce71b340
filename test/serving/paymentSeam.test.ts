/**
 * The payment seam of serving/payments/PaymentGate.ts, driven by the Dispatcher over real HTTP: authorize →
 * handler (effects deferred through payment.commit) → settle → effects → response; release exactly once when no
 * answer is delivered. A scripted gate records the order of every step.
 */
import t from 'tap'
import type { PaymentGate, PaymentGrant, PaymentRequest, SettleOutcome } from '../../serving/payments/PaymentGate.ts'
import { RateLimiter } from '../../serving/RateLimiter.ts'
import { ROUTES } from '../../serving/routes/registry.ts'
import type { RouteDef } from '../../serving/routes/types.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import { withServer } from '../helpers/serving/server.ts'

class ScriptedGate implements PaymentGate {
  readonly steps: string[] = []
  settleWith: SettleOutcome | 'throw' = { ok: true, response_headers: { 'PAYMENT-RESPONSE': 'receipt' } }

  async authorize(_req: PaymentRequest): Promise<PaymentGrant> {
    this.steps.push('authorize')
    return {
      kind: 'paid', payment_id: 'p1', rail: 'x402', payer: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
      settle: async () => {
        this.steps.push('settle')
        if (this.settleWith === 'throw') throw new Error('boom')
        return this.settleWith
      },
      release: async (cause) => void this.steps.push(`release:${cause}`),
    }
  }
}

function route(gate: ScriptedGate, behaviour: { throwIn?: 'handler' | 'effect' }): RouteDef {
  return {
    id: 'test.seam', method: 'POST', path: '/test/seam', summary: 'seam', tags: ['test'], pay: { kind: 'paid', pricingKey: 'perp.funding' },
    request: {}, response: { kind: 'envelope', schema: { type: 'object' } }, errors: [],
    handler: (ctx) => {
      gate.steps.push('handler')
      ctx.payment!.commit(() => {
        gate.steps.push('effect')
        if (behaviour.throwIn === 'effect') throw new Error('disk full')
      })
      if (behaviour.throwIn === 'handler') throw new ServiceError('PROVIDER_DOWN')
      return { data: { ok: true } }
    },
  }
}

async function run(t: Parameters<typeof withServer>[0], gate: ScriptedGate, behaviour: { throwIn?: 'handler' | 'effect' } = {}, rateLimiter?: RateLimiter) {
  const server = await withServer(t, { routes: [...ROUTES, route(gate, behaviour)], services: { paymentGate: gate, ...(rateLimiter ? { rateLimiter } : {}) } })
  return fetch(`${server.url}/test/seam`, { method: 'POST' })
}

t.test('success: settle after the handler, effects after settle, settle headers on the answer', async (t) => {
  const gate = new ScriptedGate()
  const res = await run(t, gate)
  t.equal(res.status, 200)
  t.equal(res.headers.get('payment-response'), 'receipt')
  t.same(gate.steps, ['authorize', 'handler', 'settle', 'effect'])
})

t.test('settle refused: its error is the answer, effects never run, release once', async (t) => {
  const gate = new ScriptedGate()
  gate.settleWith = { ok: false, error: new ServiceError('PAYMENT_INVALID', { headers: { 'PAYMENT-RESPONSE': 'failed' }, detail: { reason: 'insufficient_funds' } }) }
  const res = await run(t, gate)
  t.equal(res.status, 402)
  t.equal(res.headers.get('payment-response'), 'failed')
  t.same(gate.steps, ['authorize', 'handler', 'settle', 'release:settle_failed'])
})

t.test('settle throws: INTERNAL, release, no effects', async (t) => {
  const gate = new ScriptedGate()
  gate.settleWith = 'throw'
  const res = await run(t, gate)
  t.equal(res.status, 500)
  t.same(gate.steps, ['authorize', 'handler', 'settle', 'release:settle_failed'])
})

t.test('handler throws: its refusal, release, never settled', async (t) => {
  const gate = new ScriptedGate()
  const res = await run(t, gate, { throwIn: 'handler' })
  t.equal(res.status, 503)
  t.same(gate.steps, ['authorize', 'handler', 'release:handler_failed'])
})

t.test('an effect fails after settlement: INTERNAL, settlement is not undone', async (t) => {
  const gate = new ScriptedGate()
  const res = await run(t, gate, { throwIn: 'effect' })
  t.equal(res.status, 500)
  t.same(gate.steps, ['authorize', 'handler', 'settle', 'effect'])
})

t.test('per-payer rate limit after authorize: release, handler never runs', async (t) => {
  const gate = new ScriptedGate()
  const limiter = new RateLimiter({ ip: { burst: 1000, refillPerSec: 1000 }, payer: { burst: 0, refillPerSec: 0.001 } })
  const res = await run(t, gate, {}, limiter)
  t.equal(res.status, 429)
  t.same(gate.steps, ['authorize', 'release:rate_limited'])
})
