/**
 * Sample ledger records: a valid claim (decision n, a minute apart from 2026-07-01, 4 h horizon) and its outcome, each
 * with overrides. Here, not in test/, because the benchmarks use them too (bench imports no test helper); the ledger,
 * bus and checkpoint tests take them through test/helpers/ledgerRecords.ts, so the fixture follows the schema once.
 */
import type { LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import type { LedgerOutcome } from '../pipeline/records/outcomeRecord.ts'
import type { DecisionLedger } from '../engine/DecisionLedger.ts'
import { DAY_MS } from '../common/time.ts'

export function testDecision(n: number, o: Partial<LedgerDecision> = {}): LedgerDecision {
  const hex = n.toString(16).padStart(12, '0')
  return {
    v: 1,
    decision_id: `0198a3c4-5e6f-8a0b-9c1d-${hex}`,
    question_id: 'S05_volatility_expansion',
    asset: 'BTC',
    subject: null,
    event: `event ${n}`,
    horizon: '240m',
    horizon_end: new Date(Date.UTC(2026, 6, 1, 4) + n * 60_000).toISOString(),
    created_at: new Date(Date.UTC(2026, 6, 1) + n * 60_000).toISOString(),
    conditions: { n },
    probability: 0.2,
    confidence: 0.5,
    decision: 'vol_expansion:unlikely',
    action: 'monitor',
    input_hash: 'a'.repeat(64),
    state_hash: 'b'.repeat(64),
    policy_version: 'policy-2.0.0',
    jev_version: 'jev-1.0.0',
    choice: null,
    payment_id: null,
    payment_rail: 'none',
    matched_rules: [],
    refusal_reason: null,
    model_id: 'S05_volatility_expansion',
    fitted_version: null,
    policy_checksum: 'c'.repeat(64),
    journal: null,
    ...o,
  }
}

/** The outcome resolving `d` at its horizon end ('not' unless overridden). */
export function testOutcome(d: LedgerDecision, o: Partial<LedgerOutcome> = {}): LedgerOutcome {
  return {
    v: 1, decision_id: d.decision_id, question_id: d.question_id, asset: d.asset, subject: d.subject, outcome: 'not',
    resolved_at: d.horizon_end, horizon_end: d.horizon_end, statistic: 0.01, statistic_detail: null, realized_choice: null, reason: null,
    ...o,
  }
}

/** `count` sample claims spread evenly over `spanMs` from `startMs`, assets in turn, each with a 4-hour horizon. */
export function sampleClaims(count: number, startMs: number, spanMs: number, assets: readonly string[]): LedgerDecision[] {
  const step = spanMs / count
  return Array.from({ length: count }, (_, n) => {
    const created = startMs + Math.floor(n * step)
    return testDecision(n + 1, { asset: assets[n % assets.length]!, created_at: new Date(created).toISOString(), horizon_end: new Date(created + 4 * 3_600_000).toISOString() })
  })
}

/**
 * Appends `decisions` sample decisions spread evenly over `days` from 2026-01-01 (assets in turn, 4-hour horizons),
 * each followed by its outcome, in batches of 2,000: a long resolved ledger for the restart benches.
 */
export async function appendLedgerHistory(ledger: DecisionLedger, days: number, decisions: number, assets: readonly string[]): Promise<void> {
  const all = sampleClaims(decisions, Date.UTC(2026, 0, 1), days * DAY_MS, assets)
  for (let i = 0; i < decisions; i += 2000) {
    const batch = all.slice(i, i + 2000)
    for (const d of batch) ledger.stageDecision(d)
    await ledger.flush()
    for (const d of batch) ledger.stageOutcome(testOutcome(d))
    await ledger.flush()
  }
}
