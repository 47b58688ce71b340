/**
 * What the domain code that answers a paid call sees of its payment: who paid, by which rail, under which payment id,
 * and a way to defer the answer's durable side effects until the payment is captured (serving/payments/PaymentGate.ts
 * describes the four steps of a paid call). Ledger rows, credited lots and locked calls exist only for a paid answer:
 * a handler registers them with commit() instead of writing them, so a failed settlement records nothing.
 */

/** A side effect of a paid answer, run only after the payment is captured. */
export type CommitEffect = () => void | Promise<void>

export type PaymentRail = 'x402' | 'credits'

export interface PaidCall {
  kind: 'paid'
  payment_id: string
  rail: PaymentRail
  /** The verified payer address; null when the rail does not identify one. */
  payer: string | null
  /** Defers a side effect until the payment is captured; it never runs when settlement fails. */
  commit(effect: CommitEffect): void
}
