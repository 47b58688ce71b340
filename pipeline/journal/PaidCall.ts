/**
 * What the domain code that answers a paid call sees of its payment: who paid, by which rail, under which payment id,
 * and the call's unit of work (serving/payments/PaymentGate.ts describes the steps of a paid call). Ledger rows,
 * credited lots and locked calls exist only for a paid answer: a handler adds them to `unit` instead of writing them,
 * and they are appended with the payment's own records (a credits debit and answer receipt) as one atomic unit once
 * the payment is captured, so a failed settlement records nothing and a crash leaves all or nothing.
 */
import type { UnitOfWork } from './UnitOfWork.ts'

export type PaymentRail = 'x402' | 'credits'

export interface PaidCall {
  kind: 'paid'
  payment_id: string
  rail: PaymentRail
  /** The verified payer address; null when the rail does not identify one. */
  payer: string | null
  /** The records the answer writes go here (never written directly). */
  readonly unit: UnitOfWork
}
