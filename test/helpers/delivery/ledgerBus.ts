/**
 * A decision ledger for delivery tests, on the engine's real bus primitive (engine/LedgerBus.ts Channel): decisions
 * and resolutions it holds are replayed to every subscriber, new ones published, exactly as the engine's ledger bus
 * does after a restart. Decision and outcome rows are built valid against their journal schemas.
 */
import { randomUUID } from 'node:crypto'
import { Channel, type ResolutionEvent } from '../../../engine/LedgerBus.ts'
import { DECISIONS, type LedgerDecision } from '../../../pipeline/records/decisionRecord.ts'
import { OUTCOMES_JOURNAL, type LedgerOutcome } from '../../../pipeline/records/outcomeRecord.ts'
import type { DeliveryLedger } from '../../../product/delivery/ports.ts'

const iso = (ms: number) => new Date(ms).toISOString()

export class TestLedger implements DeliveryLedger {
  readonly decisionsById = new Map<string, LedgerDecision>()
  readonly events: ResolutionEvent[] = []
  readonly resolutions = new Channel<ResolutionEvent>('resolution', () => this.events, (e) => e.outcome.decision_id)
  readonly decisions = new Channel<LedgerDecision>('decision', () => this.decisionsById.values(), (d) => d.decision_id)
  now: number

  constructor(now = Date.parse('2026-03-02T10:00:00.000Z')) {
    this.now = now
  }

  decision(id: string): LedgerDecision | null {
    return this.decisionsById.get(id) ?? null
  }

  clockNow(): number {
    return this.now
  }

  /** Records a claim (or a refusal) at the ledger's now; horizon 60 minutes. */
  addDecision(fields: Partial<LedgerDecision> = {}): LedgerDecision {
    const d = DECISIONS.decode(DECISIONS.encode({
      v: 1, decision_id: randomUUID(), question_id: 'S05_volatility_expansion', asset: 'BTC', subject: null, event: 'vol_expansion', horizon: '60m',
      horizon_end: iso(this.now + 3_600_000), created_at: iso(this.now), conditions: {}, probability: 0.42, confidence: 0.8,
      decision: 'signal', action: 'watch', input_hash: 'a'.repeat(64), state_hash: 'b'.repeat(64), policy_version: 'policy-3.0.0',
      jev_version: 'jev-1', choice: null, payment_id: null, payment_rail: 'credits', matched_rules: [], refusal_reason: null,
      model_id: 'test', fitted_version: null, policy_checksum: 'c'.repeat(64), journal: null, ...fields,
    } as LedgerDecision))
    this.decisionsById.set(d.decision_id, d)
    this.decisions.publish(d)
    return d
  }

  /** Resolves a decision at the ledger's now; publish false: written while nobody listens (the service is down). */
  resolve(d: LedgerDecision, outcome: LedgerOutcome['outcome'] = 'obtains', opts: { publish?: boolean } = {}): ResolutionEvent {
    const o = OUTCOMES_JOURNAL.decode(OUTCOMES_JOURNAL.encode({
      v: 1, decision_id: d.decision_id, question_id: d.question_id, asset: d.asset, subject: d.subject, outcome, resolved_at: iso(this.now),
      horizon_end: d.horizon_end, statistic: 1.5, statistic_detail: null, realized_choice: null, reason: null,
    }))
    const e = { decision: d, outcome: o }
    this.events.push(e)
    if (opts.publish ?? true) this.resolutions.publish(e)
    return e
  }
}
