/**
 * The credit draws journal: every credit movement as one append-only record on the `billing.draws` topic (key =
 * payer, so one payer's rows keep their order), the source of truth for balances (product/billing/CreditLedger.ts).
 *
 * Spec (Billing resources): "Draws journal | { payer, count, draws: [{ id, kind (debit, credit or refund), amount
 * (negative for a debit), reason, ref, lot_id, created_at, reversed_at (null unless reversed) }] }". reversed_at is
 * never stored: it is derived from the refund row that carries the debit's ref.
 *
 * debit, credit, refund: the spec's draw kinds. answer: the receipt of a paid answer (amount 0, ref = the debit's
 * ref), appended with the debit and the answer it paid for; start-up recovery reverses debits without one. Draw
 * listings leave answer rows out.
 */
import { randomUUID } from 'node:crypto'
import { Instant, NullableInstant, StringEnum, Type, type Static } from '../../common/schema.ts'
import { JournalDef } from '../journal/JournalDef.ts'

export const DRAW_KINDS = ['debit', 'credit', 'refund', 'answer'] as const
export type DrawKind = (typeof DRAW_KINDS)[number]

export const DRAW_RECORD_SCHEMA = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    payer: Type.String({ minLength: 1 }),
    kind: StringEnum(DRAW_KINDS),
    /** Credits; negative for a debit, positive for a credit or refund, 0 for an answer receipt. */
    amount: Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }),
    /** Credit rows: the lot's source (scout, pack.<id>, plan.<id>, grant, rate_lock). Debits: the pricing key. Refunds: reversal.<cause>. */
    reason: Type.String(),
    /** Debit and refund: the payment id of the debit. Credit: the purchase payment id, grant ref or scout:<payer>. */
    ref: Type.String(),
    lot_id: Type.String(),
    created_at: Instant,
    /** Credit rows: the lot's expiry (null = never). Other rows: null. */
    expires_at: NullableInstant,
  },
  {
    additionalProperties: false,
    // "amount (negative for a debit)"; an answer receipt moves nothing; credits and refunds add.
    allOf: [
      { if: { properties: { kind: { const: 'debit' } } }, then: { properties: { amount: { maximum: -1 } } } },
      { if: { properties: { kind: { const: 'answer' } } }, then: { properties: { amount: { const: 0 } } } },
      { if: { properties: { kind: { enum: ['credit', 'refund'] } } }, then: { properties: { amount: { minimum: 1 } } } },
    ],
  },
)

export type DrawRow = Static<typeof DRAW_RECORD_SCHEMA>

export function newDrawId(): string {
  return `dr_${randomUUID()}`
}

export const DRAWS = new JournalDef({
  name: 'billing.draws',
  schema: DRAW_RECORD_SCHEMA,
  key: (d) => d.payer,
  id: (d) => d.id,
  time: (d) => Date.parse(d.created_at),
  table: { rows: 'billing_draw_rows', dir: 'billing.draws' },
})

export const encodeDraw = (row: DrawRow): Buffer => DRAWS.encode(row)
/** Decodes one journal record; throws naming the bad field (the sink stores such records among the rejects). */
export const decodeDraw = (value: Buffer): DrawRow => DRAWS.decode(value)
