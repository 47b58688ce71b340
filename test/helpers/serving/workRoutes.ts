/**
 * A paid route whose handler does real work, plus the free read of the record it stores, for the credits tests,
 * the crash fixture and bench/payments-credits.ts. The decision engine's adapter is wired by other work; these
 * routes exercise the payment seam the same way (paid decision.deep, question declared up front, refusal flag,
 * charge:false repeats, handler failures), without a model.
 *
 *   POST /v1/test/work   body { question_id, n?, refuse?, repeat?, fail?: 'throw' | 'typed', work_ms? }
 *   GET  /v1/test/work/{id}   the stored record (free)
 */
import { createHash } from 'node:crypto'
import { canonicalJson } from '../../../common/jcs.ts'
import { ServiceError } from '../../../common/ServiceError.ts'
import { QuestionId, Strict, Type } from '../../../common/schema.ts'
import { ANY_OBJECT } from '../../../serving/routes/define.ts'
import type { Journal } from '../../../pipeline/journal/Journal.ts'
import { JournalDef } from '../../../pipeline/journal/JournalDef.ts'
import type { RouteDef } from '../../../serving/routes/types.ts'

export interface WorkRecord {
  id: string
  question_id: string
  digest: string
  decision: string
  payment_id: string
}

/** The work route's own journal: a paid answer's record, appended in the call's unit of work (the crash fixture). */
export const WORK_JOURNAL = new JournalDef({
  name: 'test.work',
  schema: Type.Object(
    { id: Type.String(), question_id: Type.String(), digest: Type.String(), decision: Type.String(), payment_id: Type.String() },
    { additionalProperties: false },
  ),
  key: (r) => r.id,
  id: (r) => r.payment_id,
  time: () => 0,
  table: { rows: 'test_work_rows', dir: 'test.work' },
})

/** Answers kept in memory by id (the "ledger" of the test route). */
export class WorkBook {
  readonly records = new Map<string, WorkRecord>()
  /** When set, each paid answer's record goes into the call's unit of work on this journal (with its debit and receipt). */
  journal: Journal<typeof WORK_JOURNAL.schema> | null = null
}

/** SHA-256 chained n times over the canonical request: deterministic work that scales with n. */
export function work(questionId: string, n: number): string {
  let h = createHash('sha256').update(canonicalJson({ question_id: questionId, n })).digest()
  for (let i = 1; i < n; i++) h = createHash('sha256').update(h).digest()
  return h.toString('hex')
}

export function workRoutes(book: WorkBook): RouteDef[] {
  return [
    {
      id: 'test.work',
      method: 'POST',
      path: '/v1/test/work',
      summary: 'Test: paid work',
      tags: ['test'],
      pay: { kind: 'paid', pricingKey: 'decision.deep' },
      questionOf: (ctx) => String(ctx.body.question_id),
      request: {
        body: Strict({
          question_id: QuestionId,
          n: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
          refuse: Type.Optional(Type.Boolean()),
          repeat: Type.Optional(Type.Boolean()),
          fail: Type.Optional(Type.Union([Type.Literal('throw'), Type.Literal('typed')])),
          work_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
        }),
      },
      response: { kind: 'envelope', schema: ANY_OBJECT },
      errors: ['CLOCK_OPEN'],
      handler: async (ctx) => {
        const b = ctx.body
        if (b.fail === 'throw') throw new Error('handler failed')
        if (b.fail === 'typed') throw new ServiceError('CLOCK_OPEN')
        const digest = work(String(b.question_id), typeof b.n === 'number' ? b.n : 64)
        const record: WorkRecord = {
          id: digest.slice(0, 32), question_id: String(b.question_id), digest, decision: b.refuse ? 'suppress' : 'lean_likely',
          payment_id: ctx.payment!.payment_id,
        }
        if (!b.repeat) book.records.set(record.id, record)
        if (!b.repeat && book.journal) ctx.unit!.add(book.journal, [record])
        // A handler that takes time (a slow model or provider): its credits stay reserved, its unit open, meanwhile.
        if (typeof b.work_ms === 'number' && b.work_ms > 0) await new Promise<void>((resolve) => setTimeout(resolve, b.work_ms as number))
        return { data: record, refusal: b.refuse === true, ...(b.repeat ? { charge: false as const } : {}) }
      },
    },
    {
      id: 'test.work.read',
      method: 'GET',
      path: '/v1/test/work/{id}',
      summary: 'Test: free read of a stored work record',
      tags: ['test'],
      pay: { kind: 'free' },
      request: { params: Strict({ id: Type.String({ pattern: '^[0-9a-f]{32}$' }) }) },
      response: { kind: 'envelope', schema: ANY_OBJECT },
      errors: ['DECISION_NOT_FOUND'],
      handler: (ctx) => {
        const r = book.records.get(String(ctx.params.id))
        if (!r) throw new ServiceError('DECISION_NOT_FOUND', { detail: { field: '/params/id' } })
        return { data: r }
      },
    },
  ]
}
