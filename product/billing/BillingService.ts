/**
 * The billing part of the service: free allowance, balances and lots, the draws journal, credit purchases, operator
 * grants and reversals, the rate lock and the surge meter, all over one CreditLedger (restored from the draws journal).
 *
 *   const billing = await BillingService.open({ log, clock, opsToken })   // opsToken: SVC_OPS_TOKEN (app/config.ts)
 *   Server.start({ ..., services: { billing, paymentGate: new RailRouter({ payTo, credits: new CreditsPaymentGate(billing.ledger, payTo) }) } })
 *   await billing.close()
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { topicNames } from '../../pipeline/topics.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import type { Billing } from './Billing.ts'
import type { Clock } from '../../common/Clock.ts'
import { atomicToUsd, CREDIT_TO_USD, LADDER_STEP, PACKS, PLANS, priceOf, type PackId, type PlanId, type Price } from './pricing.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import { DAY_MS } from '../../common/time.ts'
import { CreditLedger, SCOUT_CREDITS, type DrawsJournal, type DrawView, type LotView } from './CreditLedger.ts'
import { Journal } from '../../pipeline/journal/Journal.ts'
import { DRAWS } from '../../pipeline/records/drawRecord.ts'
import type { CheckpointSettings } from '../../pipeline/state/StateStore.ts'

export const OPS_HEADER = 'x-svc-ops'
/** Spec (Limits): "Rate lock | 12 months; fee at current rung spot plus 20% premium". */
export const RATE_LOCK_PREMIUM = 0.2
export const RATE_LOCK_MONTHS = 12
export const RATE_LOCK_DAYS = 365
/** Surge meter windows: this long before and after turn_at (docs/decisions.md). */
export const SURGE_WINDOW_MS = 7 * DAY_MS
export const SETTLEMENT_NOTE_X402 = 'settled by x402 on Base (eip155:8453)'

export interface BillingServiceOptions {
  log: EventLog
  clock: Clock
  /** SVC_OPS_TOKEN; null when no operator token is wired (operator routes answer OPS_UNSET). */
  opsToken: string | null
  /** Draws topic; default pipeline/topics.ts. */
  topic?: string
  /** Partitions when the draws topic is created here. */
  partitions?: number
  /** State snapshots of the credit ledger (issue 31); absent: rebuilt from the journal at every start. */
  checkpoints?: CheckpointSettings | null
  /** Reverse unanswered debits at open (default); false: each payer partition's owner does (PayerOwnership). */
  recover?: boolean
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest()
const round6 = (x: number) => Math.round(x * 1e6) / 1e6

export class BillingService implements Billing {
  private readonly opsDigest: Buffer | null

  private constructor(
    readonly ledger: CreditLedger,
    private readonly journal: DrawsJournal,
    private readonly clock: Clock,
    opsToken: string | null,
  ) {
    this.opsDigest = opsToken ? digest(opsToken) : null
  }

  static async open(options: BillingServiceOptions): Promise<BillingService> {
    const journal = await Journal.open({ log: options.log, def: DRAWS, topic: options.topic ?? topicNames().draws, ...(options.partitions ? { partitions: options.partitions } : {}) })
    const ledger = await CreditLedger.open(journal, options.clock, { checkpoints: options.checkpoints ?? null, recover: options.recover ?? true })
    return new BillingService(ledger, journal, options.clock, options.opsToken)
  }

  /**
   * Spec (Authentication 4): "header x-svc-ops, compared in constant time with the deployment's operator token; when
   * no operator token is wired the response names OPS_UNSET, so there is never a public grant." Both sides are
   * hashed first so timingSafeEqual compares equal-length digests and the token length does not leak.
   */
  requireOperator(token: string | undefined): void {
    if (!this.opsDigest) throw new ServiceError('OPS_UNSET', { detail: { missing: 'SVC_OPS_TOKEN' } })
    const given = digest(token ?? '')
    if (!timingSafeEqual(given, this.opsDigest) || token === undefined) {
      throw new ServiceError('OPS_FORBIDDEN', { detail: { field: `/headers/${OPS_HEADER}` } })
    }
  }

  async scoutGrant(payer: string): Promise<{ granted: boolean; balance_credits: number }> {
    const { granted } = await this.ledger.grantScout(payer)
    return { granted, balance_credits: this.ledger.balance(payer) }
  }

  scoutStatus(payer: string) {
    const s = this.ledger.scoutStatus(payer)
    return {
      payer,
      available: !s.granted,
      balance_credits: this.ledger.balance(payer),
      credits_per_grant: SCOUT_CREDITS,
      questions_left: s.granted ? s.questions_left : null,
    }
  }

  credits(payer: string): { payer: string; balance_credits: number; lots: LotView[] } {
    return { payer, balance_credits: this.ledger.balance(payer), lots: this.ledger.lots(payer) }
  }

  draws(payer: string, limit: number, cursor: string | null = null): { payer: string; count: number; draws: Omit<DrawView, 'payer'>[]; next_cursor: string | null } {
    const { count, draws, next_cursor } = this.ledger.draws(payer, limit, cursor)
    return { payer, count, draws: draws.map(({ payer: _p, ...d }) => d), next_cursor }
  }

  private async purchase(kind: 'pack' | 'plan', id: string, credits: number, lifetimeDays: number, payer: string, payment: PaidCall, unit: UnitOfWork, price: Price) {
    const base = priceOf(price.key, 0)
    const balance = this.ledger.balance(payer)
    const expires = new Date(this.clock.now() + lifetimeDays * DAY_MS).toISOString()
    // The lot joins the call's unit of work: it lands once the payment is captured, atomically with the rest of the
    // call's records (payment seam step 4), and never when settlement fails.
    this.ledger.creditIn(unit, payer, credits, { reason: `${kind}.${id}`, ref: payment.payment_id, lifetimeDays })
    return {
      [`${kind}_id`]: id,
      payer,
      base_price_usd: base.usd,
      price_usd: base.usd,
      current_price_usd: price.usd,
      rung: price.rung,
      currency: 'USD' as const,
      settlement_note: SETTLEMENT_NOTE_X402,
      credits_added: credits,
      balance_credits: balance + credits,
      lot: { lifetime_days: lifetimeDays, expires_at: expires },
      payment_id: payment.payment_id,
    }
  }

  /** Spec (Billing): "credits land as a 60-day lot". */
  purchasePack(packId: PackId, payer: string, payment: PaidCall, unit: UnitOfWork, price: Price) {
    const p = PACKS[packId]
    return this.purchase('pack', packId, p.credits, p.lot_days, payer, payment, unit, price)
  }

  /** Spec (Limits): "Plan cycle | 30 days, no auto renewal": one 30-day lot per purchase. */
  async purchasePlan(planId: PlanId, payer: string, payment: PaidCall, unit: UnitOfWork, price: Price) {
    const p = PLANS[planId]
    return { ...(await this.purchase('plan', planId, p.credits, p.cycle_days, payer, payment, unit, price)), auto_renew: false as const }
  }

  /** Operator grant: a never-expiring lot, idempotent by ref (a repeated ref never credits twice). */
  async grant(input: { payer: string; credits: number; ref: string }) {
    const { row, replayed } = await this.ledger.credit(input.payer, input.credits, { reason: 'grant', ref: input.ref, lifetimeDays: null })
    return {
      action: 'grant' as const, payer: input.payer, ref: input.ref, granted: true, replayed, credits: row.amount, lot_id: row.lot_id,
      balance_credits: this.ledger.balance(input.payer),
    }
  }

  /** Operator reversal of a debit by its ref: idempotent, never a second credit. */
  async reverse(input: { payer: string; ref: string }) {
    const { refunds, replayed } = await this.ledger.reverse(input.payer, input.ref, 'operator')
    return {
      action: 'reverse' as const, payer: input.payer, ref: input.ref, reversed: true, replayed,
      credits: refunds.reduce((s, r) => s + r.amount, 0), reversed_at: refunds[0]!.created_at,
      balance_credits: this.ledger.balance(input.payer),
    }
  }

  /**
   * Spec (Billing resources): "Rate-lock quote | { quote, spot_usd_per_credit, lock: { sku, premium, months,
   * purchase_usd_per_credit, break_even: { claim, turns_to_pay_off, note } } }". Break-even: the lock costs 1.2×
   * spot today and saves 1.25× per ladder turn, so it pays off after the first turn (turns = ⌈ln 1.2 / ln 1.25⌉).
   */
  rateLockQuote(payer: string, rung: number) {
    const spot = CREDIT_TO_USD * LADDER_STEP ** rung
    const purchase = spot * (1 + RATE_LOCK_PREMIUM)
    const turns = Math.ceil(Math.log(1 + RATE_LOCK_PREMIUM) / Math.log(LADDER_STEP))
    return {
      quote: { payer, rung, currency: 'USD' as const, quoted_at: new Date(this.clock.now()).toISOString() },
      spot_usd_per_credit: round6(spot),
      lock: {
        sku: 'billing.rate_lock.12m',
        premium: RATE_LOCK_PREMIUM,
        months: RATE_LOCK_MONTHS,
        purchase_usd_per_credit: round6(purchase),
        break_even: {
          claim: `the lock pays for itself if the price ladder turns at least ${turns} time${turns === 1 ? '' : 's'} within ${RATE_LOCK_MONTHS} months`,
          turns_to_pay_off: turns,
          note: 'ladder turns are gated on measured evidence (realized outcomes and published calibration); no turn is promised',
        },
      },
    }
  }

  /** Operator-issued (fee-free) rate lock: the credits land as a 12-month lot at the current rung's spot rate. */
  async rateLockIssue(payer: string, credits: number, rung: number, ref: string) {
    const q = this.rateLockQuote(payer, rung)
    const { row, replayed } = await this.ledger.credit(payer, credits, { reason: 'rate_lock', ref, lifetimeDays: RATE_LOCK_DAYS })
    return {
      granted: true as const, replayed, lock: q.lock, credits, rung, fee_usd: '0.00', locked_usd_per_credit: q.spot_usd_per_credit,
      status: 'settling' as const, lot_id: row.lot_id, expires_at: row.expires_at,
    }
  }

  /** The fee of a rate lock of `credits` at `rung`: credits × spot × 1.2, in atomic USDC (rounded up). */
  rateLockFee(credits: number, rung: number): { usd: string; atomic: bigint } {
    const base = BigInt(credits) * 1000n * 6n * 5n ** BigInt(rung)
    const den = 5n * 4n ** BigInt(rung)
    const atomic = (base + den - 1n) / den
    return { usd: atomicToUsd(atomic), atomic }
  }

  /**
   * Spec (Billing resources): "Surge meter | { before_usd, after_usd, ratio }; ratio is null when the after-window
   * has no settled revenue". Settled revenue = committed, unreversed debits drawn from paid lots (packs, plans, rate
   * locks; not the free allowance or operator grants) valued at credit_to_usd, in the 7 days before and after turn_at.
   */
  surge(turnAt: number) {
    let before = 0
    let after = 0
    const reversed = new Set<string>()
    for (const r of this.ledger.allRows()) if (r.kind === 'refund') reversed.add(`${r.ref}|${r.lot_id}`)
    for (const r of this.ledger.allRows()) {
      if (r.kind !== 'debit' || reversed.has(`${r.ref}|${r.lot_id}`)) continue
      const source = this.ledger.lotOf(r.payer, r.lot_id)?.source ?? ''
      if (!/^(pack|plan)\.|^rate_lock$/.test(source)) continue
      const at = Date.parse(r.created_at)
      if (at >= turnAt - SURGE_WINDOW_MS && at < turnAt) before += -r.amount
      else if (at >= turnAt && at < turnAt + SURGE_WINDOW_MS) after += -r.amount
    }
    const beforeUsd = round6(before * CREDIT_TO_USD)
    const afterUsd = round6(after * CREDIT_TO_USD)
    return {
      turn_at: new Date(turnAt).toISOString(),
      window_ms: SURGE_WINDOW_MS,
      before_usd: beforeUsd,
      after_usd: afterUsd,
      ratio: afterUsd > 0 && beforeUsd > 0 ? round6(afterUsd / beforeUsd) : null,
    }
  }

  async close(): Promise<void> {
    await this.ledger.close()
    await this.journal.close()
  }
}
