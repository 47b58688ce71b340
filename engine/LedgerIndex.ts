/**
 * The ledger in memory: every decision and outcome the topics carry, indexed for the free reads (by id, by unique
 * prefix, latest per question and asset, the latest decision of each clock, unresolved claims, the resolved feed).
 * Fed by DecisionLedger (its follower over the decisions/outcomes topics and its own appends). First record per id
 * wins, as in the `decisions` and `outcomes` views: a later record with the same id and other content is a conflict
 * and is not applied.
 *
 * Its state snapshot (pipeline/state/, LEDGER_STATE_SCHEMA): every decision, ordered by (created_at, decision_id),
 * every outcome by (resolved_at, decision_id), then the conflict count, each record in canonical JSON key order. The
 * rows are the sets, not the arrival order, so a snapshot + tail and a rebuild (whose partitions interleave
 * differently) give equal rows. Loaded in that order, the bus replay after a restore (every decision, then every
 * resolution) is in event-time order.
 */
import { canonicalJson, isCanonicalOrder } from '../common/jcs.ts'
import { DECISIONS, decisionKey, type LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import { OUTCOMES_JOURNAL, type LedgerOutcome } from '../pipeline/records/outcomeRecord.ts'

/** The snapshot rows' shape: bump when it or the meaning of a row changes (older snapshots are then rebuilt). */
export const LEDGER_STATE_SCHEMA = 1

export type AddResult = 'added' | 'duplicate' | 'conflict'

/** Newest first: created_at descending, then decision_id descending (spec: latest decision route). */
function newer(a: LedgerDecision, b: LedgerDecision): boolean {
  return a.created_at > b.created_at || (a.created_at === b.created_at && a.decision_id > b.decision_id)
}

/**
 * A record with its keys in canonical order: own writes keep their construction order, records read back (from the
 * log or a snapshot) are sorted already and are kept as they are (re-canonicalizing every record made one snapshot
 * write of a 35-day ledger take seconds on the event loop).
 */
const canonical = <T>(record: T): T => (isCanonicalOrder(record) ? record : (JSON.parse(canonicalJson(record)) as T))

const byKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

export function isClaim(d: LedgerDecision): boolean {
  return d.action !== 'refuse'
}

export class LedgerIndex {
  private readonly decisions = new Map<string, LedgerDecision>()
  private readonly outcomes = new Map<string, LedgerOutcome>()
  private readonly prefixes = new Map<string, string[]>()
  private readonly latestByQuestionAsset = new Map<string, LedgerDecision>()
  private readonly latestByClock = new Map<string, LedgerDecision>()
  private readonly unresolved = new Set<string>()
  private feedList: LedgerOutcome[] = []
  private feedSorted = true
  conflicts = 0

  get size(): { decisions: number; outcomes: number } {
    return { decisions: this.decisions.size, outcomes: this.outcomes.size }
  }

  addDecision(d: LedgerDecision): AddResult {
    const have = this.decisions.get(d.decision_id)
    if (have) {
      if (canonicalJson(have) === canonicalJson(d)) return 'duplicate'
      this.conflicts++
      return 'conflict'
    }
    this.decisions.set(d.decision_id, d)
    const p = d.decision_id.slice(0, 8)
    const list = this.prefixes.get(p)
    if (list) list.push(d.decision_id)
    else this.prefixes.set(p, [d.decision_id])
    const qa = `${d.question_id}|${d.asset}`
    const prevQa = this.latestByQuestionAsset.get(qa)
    if (!prevQa || newer(d, prevQa)) this.latestByQuestionAsset.set(qa, d)
    const ck = decisionKey(d)
    const prevClock = this.latestByClock.get(ck)
    if (!prevClock || newer(d, prevClock)) this.latestByClock.set(ck, d)
    if (isClaim(d) && !this.outcomes.has(d.decision_id)) this.unresolved.add(d.decision_id)
    return 'added'
  }

  /**
   * Puts `d` in place of the record of its id: only a record of identical inputs written first in the journal by
   * another instance, found after this process indexed its own at acknowledgement (DecisionLedger: the journal's first
   * record of an id is the ledger's, on every instance). The id, and so every key derived from it, stays.
   */
  replaceDecision(d: LedgerDecision): void {
    const have = this.decisions.get(d.decision_id)
    if (!have) throw new Error(`decision ${d.decision_id} is not indexed`)
    this.decisions.set(d.decision_id, d)
    const qa = `${d.question_id}|${d.asset}`
    if (this.latestByQuestionAsset.get(qa) === have) this.latestByQuestionAsset.set(qa, d)
    const ck = decisionKey(d)
    if (this.latestByClock.get(ck) === have) this.latestByClock.set(ck, d)
  }

  addOutcome(o: LedgerOutcome): AddResult {
    const have = this.outcomes.get(o.decision_id)
    if (have) {
      if (canonicalJson(have) === canonicalJson(o)) return 'duplicate'
      this.conflicts++
      return 'conflict'
    }
    this.outcomes.set(o.decision_id, o)
    this.unresolved.delete(o.decision_id)
    const last = this.feedList[this.feedList.length - 1]
    if (last && (o.resolved_at < last.resolved_at || (o.resolved_at === last.resolved_at && o.decision_id < last.decision_id))) this.feedSorted = false
    this.feedList.push(o)
    return 'added'
  }

  decision(id: string): LedgerDecision | null {
    return this.decisions.get(id) ?? null
  }

  outcome(id: string): LedgerOutcome | null {
    return this.outcomes.get(id) ?? null
  }

  /** Decisions whose id starts with `prefix` (8+ characters); at most `limit`. */
  byPrefix(prefix: string, limit = 2): LedgerDecision[] {
    const p = prefix.toLowerCase()
    if (p.length < 8) return []
    const out: LedgerDecision[] = []
    for (const id of this.prefixes.get(p.slice(0, 8)) ?? []) {
      if (id.startsWith(p)) out.push(this.decisions.get(id)!)
      if (out.length >= limit) break
    }
    return out
  }

  latest(questionId: string, asset: string): LedgerDecision | null {
    return this.latestByQuestionAsset.get(`${questionId}|${asset}`) ?? null
  }

  latestOfClock(questionId: string, asset: string, subject: string | null): LedgerDecision | null {
    return this.latestByClock.get(decisionKey({ question_id: questionId, asset, subject })) ?? null
  }

  /** Claims with no outcome yet. */
  unresolvedClaims(): LedgerDecision[] {
    return [...this.unresolved].map((id) => this.decisions.get(id)!)
  }

  /**
   * Outcomes, newest resolved first (resolved_at desc, then decision_id desc); with `before`, only those strictly after
   * that position in this order (a page's cursor). The key never changes once written and is unique, so a walk by it
   * lists each outcome present when the walk began exactly once, whatever arrives meanwhile (a late outcome lands
   * either behind the walk's position, and is listed once, or ahead of it, for the next walk from the top).
   */
  feed(limit: number, before: { resolved_at: string; decision_id: string } | null = null): LedgerOutcome[] {
    if (!this.feedSorted) {
      this.feedList.sort((a, b) => byKey(a.resolved_at, b.resolved_at) || byKey(a.decision_id, b.decision_id))
      this.feedSorted = true
    }
    // The first index whose key is not below `before` (the list is ascending): everything under it is older.
    let end = this.feedList.length
    if (before !== null) {
      let lo = 0
      let hi = this.feedList.length
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        const o = this.feedList[mid]!
        if ((byKey(o.resolved_at, before.resolved_at) || byKey(o.decision_id, before.decision_id)) < 0) lo = mid + 1
        else hi = mid
      }
      end = lo
    }
    const out: LedgerOutcome[] = []
    for (let i = end - 1; i >= 0 && out.length < limit; i--) out.push(this.feedList[i]!)
    return out
  }

  /** The state as snapshot rows: ['d', decision]…, ['o', outcome]…, ['conflicts', n] (header). */
  *rows(): Iterable<unknown> {
    const decisions = [...this.decisions.values()].sort((a, b) => byKey(a.created_at, b.created_at) || byKey(a.decision_id, b.decision_id))
    for (const d of decisions) yield ['d', canonical(d)]
    const outcomes = [...this.outcomes.values()].sort((a, b) => byKey(a.resolved_at, b.resolved_at) || byKey(a.decision_id, b.decision_id))
    for (const o of outcomes) yield ['o', canonical(o)]
    yield ['conflicts', this.conflicts]
  }

  /**
   * Fills this (empty) index from snapshot rows, all or nothing: every row is checked against the journals' schemas
   * (and the ids are unique) before the first is added.
   */
  load(rows: readonly unknown[]): void {
    if (this.decisions.size > 0 || this.outcomes.size > 0) throw new Error('the ledger index is not empty')
    const decisions: LedgerDecision[] = []
    const outcomes: LedgerOutcome[] = []
    let conflicts: number | null = null
    const decisionIds = new Set<string>()
    const outcomeIds = new Set<string>()
    for (const row of rows) {
      if (!Array.isArray(row) || row.length !== 2) throw new Error('a ledger state row is not a [kind, value] pair')
      const [kind, value] = row as [unknown, unknown]
      if (kind === 'd') {
        const d = DECISIONS.check(value)
        if (decisionIds.has(d.decision_id)) throw new Error(`decision ${d.decision_id} appears twice`)
        decisionIds.add(d.decision_id)
        decisions.push(d)
      } else if (kind === 'o') {
        const o = OUTCOMES_JOURNAL.check(value)
        if (outcomeIds.has(o.decision_id)) throw new Error(`outcome ${o.decision_id} appears twice`)
        outcomeIds.add(o.decision_id)
        outcomes.push(o)
      } else if (kind === 'conflicts' && Number.isSafeInteger(value) && (value as number) >= 0 && conflicts === null) {
        conflicts = value as number
      } else throw new Error(`unexpected ledger state row ${JSON.stringify(kind)}`)
    }
    if (conflicts === null) throw new Error('the ledger state has no conflicts row')
    for (const d of decisions) this.addDecision(d)
    for (const o of outcomes) this.addOutcome(o)
    this.conflicts = conflicts
  }

  *allDecisions(): IterableIterator<LedgerDecision> {
    yield* this.decisions.values()
  }

  /** Outcomes in the order the index learned them. */
  *outcomesInOrder(): IterableIterator<LedgerOutcome> {
    yield* this.outcomes.values()
  }
}
