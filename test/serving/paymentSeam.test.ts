/**
 * The payment seam of serving/payments/PaymentGate.ts, driven by the Dispatcher over real HTTP: authorize →
 * handler (what the answer writes goes into the call's unit of work) → settle → the unit appended → response; release
 * exactly once when no answer is delivered. A scripted gate records the order of every step; the unit appends to a
 * real journal on a real embedded log.
 */
import t from 'tap'
import type { PaymentGate, PaymentGrant, PaymentRequest, SettleOutcome } from '../../serving/payments/PaymentGate.ts'
import { RateLimiter } from '../../serving/RateLimiter.ts'
import { ROUTES } from '../../serving/routes/registry.ts'
import type { RouteDef } from '../../serving/routes/types.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import { withServer } from '../helpers/serving/server.ts'
import { EmbeddedLog } from '../../pipeline/log/EmbeddedLog.ts'
import { Journal } from '../../pipeline/journal/Journal.ts'
import { WORK_JOURNAL } from '../helpers/serving/workRoutes.ts'
import { makeTempDir } from '../helpers/tmp.ts'

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

type WorkJournal = Journal<typeof WORK_JOURNAL.schema>

/** The seam route: its answer is one record of the work journal, added to the call's unit of work. */
function route(gate: ScriptedGate, journal: WorkJournal, behaviour: { throwIn?: 'handler' }): RouteDef {
  return {
    id: 'test.seam', method: 'POST', path: '/test/seam', summary: 'seam', tags: ['test'], pay: { kind: 'paid', pricingKey: 'perp.funding' },
    request: {}, response: { kind: 'envelope', schema: { type: 'object' } }, errors: [],
    handler: (ctx) => {
      gate.steps.push('handler')
      const payment = ctx.payment!
      ctx.unit!.add(journal, [{ id: payment.payment_id, question_id: 'S05_volatility_expansion', digest: 'd', decision: 'lean_likely', payment_id: payment.payment_id }], {
        applied: () => void gate.steps.push('recorded'),
      })
      if (behaviour.throwIn === 'handler') throw new ServiceError('PROVIDER_DOWN')
      return { data: { ok: true } }
    },
  }
}

async function openJournal(t: Parameters<typeof withServer>[0]): Promise<{ log: EmbeddedLog; journal: WorkJournal }> {
  const log = await EmbeddedLog.open(await makeTempDir(t, 'svc-seam-'))
  const journal = await Journal.open({ log, def: WORK_JOURNAL })
  t.teardown(async () => {
    await journal.close()
    await log.close()
  })
  return { log, journal }
}

async function run(
  t: Parameters<typeof withServer>[0],
  gate: ScriptedGate,
  behaviour: { throwIn?: 'handler'; journal?: WorkJournal } = {},
  rateLimiter?: RateLimiter,
) {
  const journal = behaviour.journal ?? (await openJournal(t)).journal
  const server = await withServer(t, { routes: [...ROUTES, route(gate, journal, behaviour)], services: { paymentGate: gate, ...(rateLimiter ? { rateLimiter } : {}) } })
  return fetch(`${server.url}/test/seam`, { method: 'POST' })
}

t.test('success: settle after the handler, the unit appended after settle, settle headers on the answer', async (t) => {
  const gate = new ScriptedGate()
  const { journal } = await openJournal(t)
  const res = await run(t, gate, { journal })
  t.equal(res.status, 200)
  t.equal(res.headers.get('payment-response'), 'receipt')
  t.same(gate.steps, ['authorize', 'handler', 'settle', 'recorded'])
  t.same((await journal.readAll()).map((r) => r.payment_id), ['p1'], 'the answer is on the journal')
})

t.test('settle refused: its error is the answer, nothing recorded, release once', async (t) => {
  const gate = new ScriptedGate()
  gate.settleWith = { ok: false, error: new ServiceError('PAYMENT_INVALID', { headers: { 'PAYMENT-RESPONSE': 'failed' }, detail: { reason: 'insufficient_funds' } }) }
  const { journal } = await openJournal(t)
  const res = await run(t, gate, { journal })
  t.equal(res.status, 402)
  t.equal(res.headers.get('payment-response'), 'failed')
  t.same(gate.steps, ['authorize', 'handler', 'settle', 'release:settle_failed'])
  t.same(await journal.readAll(), [], 'the unit was dropped')
})

t.test('settle throws: INTERNAL, release, nothing recorded', async (t) => {
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

t.test('the unit cannot be appended after settlement: INTERNAL, settlement not undone, nothing recorded', async (t) => {
  const gate = new ScriptedGate()
  const { journal } = await openJournal(t)
  await journal.close() // its producer refuses every append from now on (LOG_CLOSED)
  const res = await run(t, gate, { journal })
  t.equal(res.status, 500)
  t.equal((await res.json()).error.code, 'INTERNAL')
  t.same(gate.steps, ['authorize', 'handler', 'settle'], 'captured, never released, never recorded: the log line names the payment for reconciliation')
})

t.test('per-payer rate limit after authorize: release, handler never runs', async (t) => {
  const gate = new ScriptedGate()
  const limiter = new RateLimiter({ ip: { burst: 1000, refillPerSec: 1000 }, payer: { burst: 0, refillPerSec: 0.001 } })
  const res = await run(t, gate, {}, limiter)
  t.equal(res.status, 429)
  t.same(gate.steps, ['authorize', 'release:rate_limited'])
})
