/**
 * The funnel's projection of the event streams: it subscribes to the ledger bus and the duel's call events (both
 * replay everything already known on subscribe, and deliver each id once per process), and keeps only aggregates —
 * counts and, per payer, the first lock and the first grade — so memory grows with payers, not with calls. The
 * credit rows and the Arena's counts are read when a snapshot is taken (their owners already hold them).
 */
import type { FunnelCallSource, FunnelLedgerSource } from './ports.ts'

export interface LedgerFacts {
  /** Decisions that carry a payment rail (x402 or credits): a payer ran a decision. */
  paidDecisions: number
  /** Resolutions of those decisions. */
  paidResolutions: number
}

export interface CallFacts {
  locks: number
  /** Calls graded (status 'graded'); void calls are not graded. */
  graded: number
  /** Per payer: first lock and first grade instants (epoch ms), null while none. */
  payers: ReadonlyMap<string, { firstLock: number | null; firstGrade: number | null }>
}

const payerKey = (p: string) => p.toLowerCase()

export class FunnelTally {
  private readonly ledger: LedgerFacts | null
  private readonly calls: { locks: number; graded: number; payers: Map<string, { firstLock: number | null; firstGrade: number | null }> } | null
  private readonly subscriptions: Array<{ unsubscribe(): void }> = []

  constructor(sources: { ledger?: FunnelLedgerSource | undefined; calls?: FunnelCallSource | undefined }) {
    this.ledger = sources.ledger ? { paidDecisions: 0, paidResolutions: 0 } : null
    this.calls = sources.calls ? { locks: 0, graded: 0, payers: new Map() } : null
    const ledger = this.ledger
    if (sources.ledger && ledger) {
      // Synchronous handlers: a replayed history is counted before the constructor returns.
      this.subscriptions.push(sources.ledger.decisions.subscribe('funnel', (d) => {
        if (d.payment_rail !== 'none') ledger.paidDecisions++
      }))
      this.subscriptions.push(sources.ledger.resolutions.subscribe('funnel', (e) => {
        if (e.decision.payment_rail !== 'none') ledger.paidResolutions++
      }))
    }
    const calls = this.calls
    if (sources.calls && calls) {
      const payer = (p: string) => {
        let s = calls.payers.get(payerKey(p))
        if (!s) calls.payers.set(payerKey(p), (s = { firstLock: null, firstGrade: null }))
        return s
      }
      this.subscriptions.push(sources.calls.locked.subscribe('funnel', (c) => {
        calls.locks++
        const s = payer(c.payer)
        const at = Date.parse(c.locked_at)
        if (s.firstLock === null || at < s.firstLock) s.firstLock = at
      }))
      this.subscriptions.push(sources.calls.graded.subscribe('funnel', (c) => {
        // Spec: "A payer activates on the first graded call"; a void call (unresolvable outcome) grades nothing.
        if (c.status !== 'graded') return
        calls.graded++
        const s = payer(c.payer)
        const at = Date.parse(c.graded_at)
        if (s.firstGrade === null || at < s.firstGrade) s.firstGrade = at
        // A grade can be delivered before its lock by a subscriber that joined late; its locked_at is the lock's.
        const locked = Date.parse(c.locked_at)
        if (s.firstLock === null || locked < s.firstLock) s.firstLock = locked
      }))
    }
  }

  /** The ledger's aggregates so far; null when the ledger is not wired. */
  ledgerFacts(): LedgerFacts | null {
    return this.ledger ? { ...this.ledger } : null
  }

  /** The duel's aggregates so far; null when the duel is not wired. */
  callFacts(): CallFacts | null {
    return this.calls ? { locks: this.calls.locks, graded: this.calls.graded, payers: new Map(this.calls.payers) } : null
  }

  close(): void {
    for (const s of this.subscriptions.splice(0)) s.unsubscribe()
  }
}
