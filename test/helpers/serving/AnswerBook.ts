/**
 * A paid test route and the free read of what it records, for payment-seam tests and the x402 bench (test-only).
 *
 *   POST /test/answers        paid (perp.funding): computes an answer, records it once the call's unit of work is
 *                             durable (ctx.unit.onCommitted), so the record exists only when settlement succeeded; ?fail=1 makes the handler throw;
 *   GET  /test/answers/{id}   free: reads the recorded answer (404 DECISION_NOT_FOUND when nothing was recorded).
 */
import { randomUUID } from 'node:crypto'
import { ServiceError } from '../../../common/ServiceError.ts'
import type { RouteDef } from '../../../serving/routes/types.ts'

export interface Answer {
  answer_id: string
  payment_id: string
  payer: string | null
  value: number
  created_at: string
}

export class AnswerBook {
  /** Append-only: what the paid route committed, in commit order. */
  readonly recorded: Answer[] = []
  /** Answers the handler computed (committed or not): shows a settle failure happened after real work. */
  computed = 0
  private readonly byId = new Map<string, Answer>()

  record(a: Answer): void {
    this.recorded.push(a)
    this.byId.set(a.answer_id, a)
  }

  get(id: string): Answer | undefined {
    return this.byId.get(id)
  }

  routes(): RouteDef[] {
    const paid: RouteDef = {
      id: 'test.answers.create', method: 'POST', path: '/test/answers', summary: 'a paid test answer', tags: ['test'],
      pay: { kind: 'paid', pricingKey: 'perp.funding' },
      request: { query: { type: 'object', additionalProperties: false, properties: { fail: { type: 'string', enum: ['1'] } } } },
      response: { kind: 'envelope', schema: { type: 'object' } }, errors: ['PROVIDER_DOWN'],
      handler: (ctx) => {
        const payment = ctx.payment!
        // ?fail=1: the handler fails after authorization (a provider died mid-call), so there is no answer to sell.
        if (ctx.query.fail === '1') throw new ServiceError('PROVIDER_DOWN', { detail: { reason: 'CIRCUIT_OPEN' } })
        const answer: Answer = {
          answer_id: randomUUID(),
          payment_id: payment.payment_id,
          payer: payment.payer,
          value: ctx.now % 997,
          created_at: new Date(ctx.now).toISOString(),
        }
        this.computed++
        ctx.unit!.onCommitted(() => this.record(answer))
        return { data: answer }
      },
    }
    const free: RouteDef = {
      id: 'test.answers.get', method: 'GET', path: '/test/answers/{answer_id}', summary: 'read a recorded test answer', tags: ['test'],
      pay: { kind: 'free' },
      request: { params: { type: 'object', required: ['answer_id'], properties: { answer_id: { type: 'string', format: 'uuid' } } } },
      response: { kind: 'envelope', schema: { type: 'object' } }, errors: ['DECISION_NOT_FOUND'],
      handler: (ctx) => {
        const a = this.get(String(ctx.params.answer_id))
        if (!a) throw new ServiceError('DECISION_NOT_FOUND', { detail: { field: 'answer_id', value: ctx.params.answer_id } })
        return { data: a }
      },
    }
    return [paid, free]
  }
}
