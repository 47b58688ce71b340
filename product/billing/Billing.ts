/**
 * What the routes call of the billing domain: the free allowance, balances and lots, the draws journal, credit
 * purchases, operator grants and reversals, the rate lock and the surge meter (BillingService implements it), and the
 * ladder measurements every price is quoted at.
 */
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import type { LadderMeasures, PackId, PlanId, Price } from './pricing.ts'

export interface Billing {
  /** Paid by x402 only (the credits rail refuses credit purchases with PLAN_NOT_RECHARGEABLE). */
  purchasePack(packId: PackId, payer: string, payment: PaidCall, unit: UnitOfWork, price: Price): Promise<unknown>
  purchasePlan(planId: PlanId, payer: string, payment: PaidCall, unit: UnitOfWork, price: Price): Promise<unknown>
  scoutGrant(payer: string): Promise<{ granted: boolean; balance_credits: number }>
  scoutStatus(payer: string): unknown
  credits(payer: string): unknown
  /** Newest first, one page after `cursor` (a previous page's next_cursor; null: the newest). */
  draws(payer: string, limit: number, cursor: string | null): unknown
  /** Throws OPS_UNSET (no token wired) or OPS_FORBIDDEN (missing or wrong x-svc-ops). */
  requireOperator(token: string | undefined): void
  grant(input: { payer: string; credits: number; ref: string }): Promise<unknown>
  /** Unknown ref → DEBIT_NOT_FOUND; idempotent. */
  reverse(input: { payer: string; ref: string }): Promise<unknown>
  rateLockQuote(payer: string, rung: number): unknown
  rateLockIssue(payer: string, credits: number, rung: number, ref: string): Promise<unknown>
  rateLockFee(credits: number, rung: number): { usd: string; atomic: bigint }
  surge(turnAt: number): unknown
}

/** Ladder measurements (GET /v1/pricing and the intelligence routes publish the same ladder object). */
export interface LadderSource {
  measures(): Promise<LadderMeasures>
}
