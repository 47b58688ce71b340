/**
 * A repeat is not charged (issue 32). Spec, POST /v1/decisions: "identical inputs under the same policy version
 * re-serve the recorded decision, and a repeat is not charged as a new decision row". One instance re-serves a
 * repeat uncharged (DecisionLedger.appendIn); two instances answering identical inputs at the same instant each write
 * their record with their payer's debit in one unit, and the ledger keeps the journal's first (engine/DecisionLedger:
 * bus.repeats names the later ones, the same on every instance). Here the later one's credits debit is reversed
 * (`reversal.repeat`), by the owner of its payer's partition only, so no two instances refund it, and at most once:
 * a reversal is idempotent by the debit's ref.
 *
 * Every instance keeps the repeats it saw until their reversal is read back: a repeat whose debit this replica has not
 * read yet waits for it, and when the owner dies before reversing, the partition's next owner does it at its next
 * sweep. A repeat paid by x402 cannot be reversed here (the payment is settled on chain): it is logged and stays
 * charged (docs/decisions.md).
 */
import type { Logger } from 'pino'
import type { LedgerDecision } from '../../pipeline/records/decisionRecord.ts'
import type { CreditLedger } from './CreditLedger.ts'

/** How often the pending repeats are looked at (a debit read, an ownership moved). */
export const REPEAT_SWEEP_MS = 500
/** A repeat whose debit this replica never reads within this is given up, logged (its unit was not written after all). */
const GIVE_UP_MS = 10 * 60_000

export class RepeatRefunds {
  /** Debit ref (the repeat's payment_id) → when it was first seen (performance.now()). */
  private readonly pending = new Map<string, number>()
  private timer: NodeJS.Timeout | null = null
  private sweeping: Promise<void> | null = null

  constructor(
    private readonly ledger: CreditLedger,
    /** Whether this instance serves the payer's credits now (its partition's owner, caught up). */
    private readonly owns: (payer: string) => boolean,
    private readonly logger: Logger,
  ) {}

  /** A repeat from the ledger's bus; swept at once and then every REPEAT_SWEEP_MS until it is reversed. */
  note(d: Pick<LedgerDecision, 'decision_id' | 'payment_id' | 'payment_rail'>): void {
    if (d.payment_id === null) return
    if (d.payment_rail !== 'credits') {
      this.logger.warn({ decision_id: d.decision_id, payment_id: d.payment_id, rail: d.payment_rail }, 'a repeat paid on a rail that cannot be reversed here stays charged')
      return
    }
    if (!this.pending.has(d.payment_id)) this.pending.set(d.payment_id, performance.now())
    this.timer ??= setInterval(() => void this.sweep(), REPEAT_SWEEP_MS).unref()
    void this.sweep()
  }

  /** Refs not reversed yet as this replica knows (tests, metrics). */
  get waiting(): number {
    return this.pending.size
  }

  /** One pass over the pending repeats; a pass already running is waited for instead. */
  sweep(): Promise<void> {
    this.sweeping ??= this.pass().finally(() => (this.sweeping = null))
    return this.sweeping
  }

  private async pass(): Promise<void> {
    for (const [ref, seenAt] of [...this.pending]) {
      const debit = this.ledger.debitOf(ref)
      if (debit?.reversed) {
        this.pending.delete(ref)
        continue
      }
      if (!debit) {
        if (performance.now() - seenAt > GIVE_UP_MS) {
          this.pending.delete(ref)
          this.logger.warn({ payment_id: ref }, 'a repeat whose debit this replica never read: nothing to reverse')
        }
        continue
      }
      if (!this.owns(debit.payer)) continue // its owner reverses it; this replica drops it once that is read
      try {
        await this.ledger.reverse(debit.payer, ref, 'repeat')
        this.pending.delete(ref)
        this.logger.info({ payer: debit.payer, payment_id: ref }, 'reversed the debit of a repeat written by another instance at once')
      } catch (err) {
        this.logger.warn({ err, payment_id: ref }, 'reversing the debit of a repeat failed; tried again at the next sweep')
      }
    }
    if (this.pending.size === 0 && this.timer) {
      clearInterval(this.timer)
      this.timer = null
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.pending.clear()
  }
}
