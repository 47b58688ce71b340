/**
 * The duel's calls that left memory (issue 31, Bounded memory: CallBook.ts keeps the hot ones), read back from the
 * sealed Parquet through DuckDB: the `call_rows` of one payer or one id (first record per call_id, as the `calls`
 * view), each graded on its clock's first `outcome_rows` record with the same pure grading.ts the book used, so a cold
 * read answers the body the hot read answered before the call was evicted.
 *
 * A small LRU of graded calls by id: a call that left memory is graded and immutable, so a cached view is never stale.
 * Pages are not cached (a payer's newest page moves with every sealed file); they are one indexed-by-nothing scan of
 * the payer's column, measured in README (Measured).
 */
import type { JsonRow } from '../../sql/Catalog.ts'
import { CALL_RECORD_VERSION, type CallRow } from '../../pipeline/records/callRecord.ts'
import { callView, grade, type OutcomeFacts } from './grading.ts'
import type { CallView } from './schemas.ts'

/** What a cold read needs of DuckDB: the catalog's views over the data folder (record/RecordDb.ts gives them). */
export interface CallsTableReader {
  query(sql: string, params?: Record<string, string | number | boolean | null>): Promise<JsonRow[]>
}

/** Newest first: (locked_at, call_id) descending, the order every call list of the duel uses. */
export type CallPosition = readonly [locked_at: string, call_id: string]

const COLUMNS =
  'c.call_id, c.payer, c.decision_id, c.question_id, c.asset, c.subject, c.call, c.call_probability, c.house_probability, c.choice_id, c.locked_at, c.horizon_end, c.payment_id, c.payment_rail'

/** One row per call (its first record), joined with its clock's first outcome; `where` filters call_rows. */
const callsSql = (where: string, tail: string) => `
WITH c AS (
  SELECT * FROM call_rows WHERE ${where}
  QUALIFY row_number() OVER (PARTITION BY call_id ORDER BY log_partition, log_offset) = 1
), o AS (
  SELECT decision_id, outcome, realized_choice, resolved_at FROM outcome_rows
  WHERE decision_id IN (SELECT decision_id FROM c)
  QUALIFY row_number() OVER (PARTITION BY decision_id ORDER BY log_partition, log_offset) = 1
)
SELECT ${COLUMNS}, o.outcome, o.realized_choice, o.resolved_at
FROM c LEFT JOIN o ON o.decision_id = c.decision_id
${tail}`

const str = (v: unknown): string => String(v)
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v))
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v))

function toView(r: JsonRow): CallView {
  const row: CallRow = {
    v: CALL_RECORD_VERSION,
    call_id: str(r.call_id),
    payer: str(r.payer),
    decision_id: str(r.decision_id),
    question_id: str(r.question_id),
    asset: str(r.asset),
    subject: strOrNull(r.subject),
    call: str(r.call) as CallRow['call'],
    call_probability: numOrNull(r.call_probability),
    house_probability: Number(r.house_probability),
    choice_id: strOrNull(r.choice_id),
    locked_at: str(r.locked_at),
    horizon_end: str(r.horizon_end),
    payment_id: str(r.payment_id),
    payment_rail: str(r.payment_rail) as CallRow['payment_rail'],
  }
  const o: OutcomeFacts | null =
    r.outcome === null || r.outcome === undefined
      ? null
      : { decision_id: row.decision_id, outcome: str(r.outcome) as OutcomeFacts['outcome'], realized_choice: strOrNull(r.realized_choice), resolved_at: str(r.resolved_at) }
  return callView(row, o ? grade(row, o) : null)
}

export class ColdCalls {
  private readonly cache = new Map<string, CallView>()
  /** Reads that went to DuckDB (tests and the bench tell a cold read from a cached one). */
  reads = 0

  constructor(
    private readonly db: CallsTableReader,
    private readonly cacheSize = 1024,
  ) {}

  /** A call by id; null when no sealed file holds it. */
  async byId(callId: string): Promise<CallView | null> {
    const hit = this.cache.get(callId)
    if (hit) {
      // Map order is insertion order: re-inserting makes it the most recently used.
      this.cache.delete(callId)
      this.cache.set(callId, hit)
      return hit
    }
    this.reads++
    const rows = await this.db.query(callsSql('call_id = $id', ''), { id: callId })
    const view = rows.length > 0 ? toView(rows[0]!) : null
    if (view) this.remember(view)
    return view
  }

  /** The payer's sealed calls newest first, strictly after `before` in that order, at most `limit`. */
  async page(payer: string, before: CallPosition | null, limit: number): Promise<CallView[]> {
    this.reads++
    const rows = await this.db.query(
      callsSql(
        'payer = $payer',
        `WHERE $at IS NULL OR c.locked_at < $at::TIMESTAMPTZ OR (c.locked_at = $at::TIMESTAMPTZ AND c.call_id < $id)
ORDER BY c.locked_at DESC, c.call_id DESC LIMIT $limit`,
      ),
      { payer, at: before?.[0] ?? null, id: before?.[1] ?? '', limit },
    )
    const views = rows.map(toView)
    for (const v of views) if (v.status !== 'locked') this.remember(v)
    return views
  }

  private remember(view: CallView): void {
    if (view.status === 'locked') return
    this.cache.delete(view.call_id)
    this.cache.set(view.call_id, view)
    if (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value!)
  }
}
