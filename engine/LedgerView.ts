/**
 * The free reads of the ledger (spec: "Reading a decision back is free"): a decision, the latest one, its resolution
 * (or an honest pending), its lineage with verification, the open clocks and the resolved feed. Answered from the
 * ledger index and the engine's event time; never a live model call.
 */
import type { FeatureSnapshot } from '../pipeline/features/FeatureSnapshot.ts'
import type { LedgerDecision, PaymentRail } from '../pipeline/records/decisionRecord.ts'
import type { LedgerOutcome } from '../pipeline/records/outcomeRecord.ts'
import { isoMs } from '../ingest/Tick.ts'
import { EngineError } from './EngineError.ts'
import { journalMatches } from './identity.ts'
import { isClaim, type LedgerIndex } from './LedgerIndex.ts'
import type { LiveFeatures } from './LiveFeatures.ts'
import { QuestionCatalog } from './QuestionCatalog.ts'
import type { Replayer } from './Replayer.ts'
import type { FeedChip, FeedPage, OpenClock, ResolutionRead, Verified } from './schemas.ts'
import { decodePosition, pageOf } from '../common/pageCursor.ts'

/** The feed's cursor: the last chip's (resolved_at, decision_id), the key it is ordered by. */
const FEED_CURSOR = 'feed'

/** The lineage of one ledger row (EngineServices renders its public bundle). */
export interface Lineage {
  decision: LedgerDecision
  resolution: ResolutionRead
  payment: { rail: PaymentRail; payment_id: string | null }
  tape: { sources: Array<{ input: string; source: string; from: string | null; to: string | null }> }
  hashes: { input_hash: string | null; state_hash: string | null; policy_checksum: string; fitted_version: string | null; release_version?: string | null }
  verify: { input_ok: Verified; state_ok: Verified }
}

export class LedgerView {
  constructor(
    readonly index: LedgerIndex,
    private readonly live: LiveFeatures,
    private readonly replayer: Replayer,
    private readonly catalog: QuestionCatalog = new QuestionCatalog(),
  ) {}

  private clockFor(questionId: string): number | null {
    return this.catalog.clockFor(questionId, this.live)
  }

  getDecision(id: string): LedgerDecision | null {
    return this.index.decision(id)
  }

  latest(questionId: string, asset: string): LedgerDecision | null {
    this.catalog.question(questionId)
    this.catalog.checkAsset(asset)
    return this.index.latest(questionId, asset)
  }

  /** Resolution read: the outcome, or pending before it. A refusal carries no claim: past its horizon it reads unresolvable (no outcome row is written). */
  resolution(decisionId: string): ResolutionRead | null {
    const d = this.index.decision(decisionId)
    if (!d) return null
    const o = this.index.outcome(decisionId)
    if (o) return { status: 'resolved', decision_id: d.decision_id, outcome: o.outcome, resolved_at: o.resolved_at, statistic: o.statistic }
    const now = this.clockFor(d.question_id)
    if (!isClaim(d) && now !== null && now >= Date.parse(d.horizon_end)) {
      return { status: 'resolved', decision_id: d.decision_id, outcome: 'unresolvable', resolved_at: d.horizon_end, statistic: null }
    }
    return { status: 'pending', decision_id: d.decision_id, horizon_end: d.horizon_end }
  }

  /** Lineage by id or unique prefix (8+); an ambiguous prefix is a VALIDATION error. A ledger read only. */
  lineage(idOrPrefix: string): Lineage | null {
    const key = idOrPrefix.toLowerCase()
    let d = this.index.decision(key)
    if (!d) {
      if (key.length < 8) return null
      const hits = this.index.byPrefix(key, 2)
      if (hits.length > 1) throw new EngineError('VALIDATION', `decision id prefix '${idOrPrefix}' is ambiguous`, { reason: 'AMBIGUOUS_PREFIX', field: 'decision_id' })
      d = hits[0] ?? null
    }
    if (!d) return null
    let sources: Lineage['tape']['sources'] = []
    let inputOk: Verified = 'unknown'
    if (d.journal !== null) {
      const m = journalMatches(d.journal, d.input_hash)
      inputOk = m === true
      if (m !== null) {
        const s = JSON.parse(d.journal) as FeatureSnapshot
        const source = s.sources.join('+')
        sources = s.freshness.map((f) => ({ input: f.input, source, from: null, to: f.last_success_at }))
      }
    }
    return {
      decision: d,
      resolution: this.resolution(d.decision_id)!,
      payment: { rail: d.payment_rail, payment_id: d.payment_id },
      tape: { sources },
      hashes: { input_hash: d.input_hash, state_hash: d.state_hash, policy_checksum: d.policy_checksum, fitted_version: d.fitted_version, ...(d.release_version === undefined ? {} : { release_version: d.release_version }) },
      verify: { input_ok: inputOk, state_ok: this.replayer.verifyState(d) },
    }
  }

  /** Open clocks: unresolved claims on sold market questions over the engine's assets whose horizon_end is still ahead. */
  openClocks(): OpenClock[] {
    const now = this.live.now()
    const nowIso = now === null ? null : isoMs(now)
    const out: OpenClock[] = []
    for (const d of this.index.unresolvedClaims()) {
      if (nowIso !== null && d.horizon_end <= nowIso) continue
      const clock = this.clockOf(d)
      if (clock) out.push(clock)
    }
    return out.sort((a, b) => (a.horizon_end < b.horizon_end ? -1 : a.horizon_end > b.horizon_end ? 1 : a.decision_id < b.decision_id ? -1 : 1))
  }

  /** One page of feed chips, newest resolved first, after the position `cursor` names (null: from the newest). */
  feedPage(limit: number, cursor: string | null): FeedPage {
    const before = cursor === null ? null : decodePosition(FEED_CURSOR, cursor, ['string', 'string'] as const)
    const page = pageOf(FEED_CURSOR, this.feed(limit + 1, before === null ? null : { resolved_at: before[0], decision_id: before[1] }), limit, (c) => [c.resolved_at, c.decision_id])
    return { chips: page.items, next_cursor: page.next_cursor }
  }

  /** The open clock a decision starts (openClockOf over this view's catalog). */
  clockOf(d: LedgerDecision): OpenClock | null {
    return openClockOf(this.catalog, d)
  }

  /** Feed chips, newest resolved first. No wallet, no model internals. */
  feed(limit: number, before: { resolved_at: string; decision_id: string } | null = null): FeedChip[] {
    return this.index.feed(limit, before).map((o) => feedChip(this.index.decision(o.decision_id)!, o))
  }
}

/** One resolution as a feed chip (what /v1/feed lists and the feed stream sends): no wallet, no model internals. */
export function feedChip(d: LedgerDecision, o: LedgerOutcome): FeedChip {
  const choice = d.choice !== null
  const graded = o.outcome !== 'unresolvable'
  return {
    decision_id: o.decision_id,
    question_id: o.question_id,
    asset: o.asset,
    output: choice ? 'choice' : 'probability',
    predicted: !graded ? null : choice ? d.choice!.choice_id : d.probability,
    realized: graded && choice ? o.realized_choice : null,
    match: graded && choice ? d.choice!.choice_id === o.realized_choice : null,
    observed: graded && !choice ? o.outcome === 'obtains' : null,
    status: o.outcome,
    resolved_at: o.resolved_at,
    horizon_end: o.horizon_end,
  }
}

/**
 * The open clock a decision starts, as /v1/clocks/open lists it: a claim on a sold market question over one of the
 * catalog's assets; null for anything else (a refusal, an account question, an unsold one). The clocks stream uses it.
 */
export function openClockOf(catalog: QuestionCatalog, d: LedgerDecision): OpenClock | null {
  if (!isClaim(d)) return null
  const q = catalog.find(d.question_id)
  if (!q || !q.sold || q.scope !== 'market' || !catalog.hasAsset(d.asset)) return null
  return { question_id: d.question_id, asset: d.asset, question_label: q.label, decision_id: d.decision_id, predicted: d.choice?.choice_id ?? d.probability, horizon_end: d.horizon_end }
}
