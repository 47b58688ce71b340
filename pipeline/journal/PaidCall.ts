/**
 * What the domain code that answers a paid call sees of its payment: who paid, by which rail, under which payment id
 * (serving/payments/PaymentGate.ts describes the steps of a paid call). What the answer writes does not ride on the
 * payment: ledger rows, credited lots and locked calls exist only for a paid answer, so a handler adds them to the
 * call's UnitOfWork (HandlerContext.unit, passed to the domain as `unit`) instead of writing them, and they are
 * appended with the payment's own records (a credits debit and answer receipt) as one atomic unit once the payment is
 * captured, so a failed settlement records nothing and a crash leaves all or nothing.
 */

export type PaymentRail = 'x402' | 'credits'

export interface PaidCall {
  kind: 'paid'
  payment_id: string
  rail: PaymentRail
  /** The verified payer address; null when the rail does not identify one. */
  payer: string | null
}
