/**
 * The notifications that left the Arena's memory (issue 31, Bounded memory: the projection keeps each payer's feed of
 * the hot window), read back from the sealed Parquet through the app's DuckDB: `arena_notification_rows` of one payer
 * (first record per key, as the `arena_notifications` view), and the read_at of such a row from the payer's read
 * marks in `arena_setting_rows`.
 *
 * Which rows are cold is told by the projection (`ColdScope`): rows created before the instant of its last eviction,
 * less the hot ones that arrived later with an older created_at. Whether a cold row is read is decided by the running
 * marks (read through N, and the ids marked above it), the same rule the projection uses for hot rows, so a page
 * merging hot and cold rows orders and counts them as the hot feed did before they left.
 *
 * No cache: a payer's page moves with every notification and mark; a read of one payer is one scan of its column.
 */
import type { NotificationRow } from '../../pipeline/records/notificationRecord.ts'

/** What a cold read needs of DuckDB: the catalog's views over the data folder (record/RecordDb.ts gives them). */
export interface FeedTableReader {
  query(sql: string, params?: Record<string, string | number | boolean | null>): Promise<Array<Record<string, unknown>>>
}

/** One payer's cold rows and read marks, as the projection knows them now. */
export interface ColdScope {
  payer: string
  /** Rows created before this instant (ISO) left memory, except `hot`. Null: none left. */
  before: string | null
  /** Ids still in memory although created before `before` (they arrived after the eviction). */
  hot: readonly number[]
  readThrough: number
  readIds: readonly number[]
  /** Kinds switched off in the payer's preferences (left out of the feed and its count). */
  hidden: readonly string[]
}

export interface ColdQuery {
  /** unread or read rows only (by the running marks); null: both. */
  read: boolean | null
  /** Ids strictly below (desc) or above (asc) this one; null: no bound. */
  below?: number | null
  above?: number | null
  order: 'desc' | 'asc'
  limit: number
}

/** A list parameter as DuckDB list text: ids are integers, kinds match the record's ^[a-z_]{1,40}$ (others are dropped). */
const ids = (xs: readonly number[]) => `[${xs.filter((x) => Number.isSafeInteger(x)).join(',')}]`
const kinds = (xs: readonly string[]) => `[${xs.filter((k) => /^[a-z_]{1,40}$/.test(k)).join(',')}]`

/** The payer's cold rows (first record per key) with the scope's filter; `extra` and `tail` finish the statement. */
const coldSql = (select: string, extra: string, tail: string) => `
WITH n AS (
  SELECT id, kind, ref, payload, created_at FROM arena_notification_rows
  WHERE payer = $payer AND created_at < $before::TIMESTAMPTZ
  QUALIFY row_number() OVER (PARTITION BY key ORDER BY log_partition, log_offset) = 1
)
SELECT ${select} FROM n
WHERE NOT list_contains($hot::BIGINT[], id) AND NOT list_contains($hidden::VARCHAR[], kind)
  AND ($read::BOOLEAN IS NULL OR $read::BOOLEAN = (id <= $through::BIGINT OR list_contains($marked::BIGINT[], id)))
  ${extra}
${tail}`

export class ColdFeed {
  /** Statements sent to DuckDB (tests and the bench tell a page that read Parquet from one that did not). */
  reads = 0

  constructor(private readonly db: FeedTableReader) {}

  private params(s: ColdScope, read: boolean | null): Record<string, string | number | boolean | null> {
    return { payer: s.payer, before: s.before, hot: ids(s.hot), hidden: kinds(s.hidden), read, through: s.readThrough, marked: ids(s.readIds) }
  }

  /** Cold rows of the scope in id order, at most `limit`. */
  async rows(s: ColdScope, q: ColdQuery): Promise<NotificationRow[]> {
    if (s.before === null) return []
    this.reads++
    const rows = await this.db.query(
      coldSql('id, kind, ref, payload, created_at', 'AND ($below::BIGINT IS NULL OR id < $below::BIGINT) AND ($above::BIGINT IS NULL OR id > $above::BIGINT)', `ORDER BY id ${q.order === 'desc' ? 'DESC' : 'ASC'} LIMIT $limit`),
      { ...this.params(s, q.read), below: q.below ?? null, above: q.above ?? null, limit: q.limit },
    )
    return rows.map((r) => ({
      key: `${String(r.kind)}|${String(r.ref)}|${s.payer}`,
      payer: s.payer,
      id: Number(r.id),
      kind: String(r.kind),
      ref: String(r.ref),
      payload: (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload) as Record<string, unknown>,
      created_at: String(r.created_at),
    }))
  }

  /** How many cold rows of these kinds the scope holds, unread or read only (null: both): hidden kinds' counts. */
  async count(s: ColdScope, kindsOnly: readonly string[], read: boolean | null): Promise<number> {
    if (s.before === null || kindsOnly.length === 0) return 0
    this.reads++
    const rows = await this.db.query(coldSql('count(*) AS n', 'AND list_contains($only::VARCHAR[], kind)', ''), { ...this.params({ ...s, hidden: [] }, read), only: kinds(kindsOnly) })
    return Number(rows[0]?.n ?? 0)
  }

  /**
   * The read_at of read cold rows: the earliest instant of a sealed read mark of the payer covering each id (a
   * mark-all through N covers ids up to N; a mark by ids covers those), by id. Marks not sealed yet are the
   * projection's to add (it keeps the window's marks).
   */
  async readAt(payer: string, wanted: readonly number[]): Promise<Map<number, string>> {
    const out = new Map<number, string>()
    if (wanted.length === 0) return out
    this.reads++
    const rows = await this.db.query(
      `WITH m AS (
  SELECT ids, through, created_at FROM arena_setting_rows WHERE payer = $payer AND kind = 'read'
  QUALIFY row_number() OVER (PARTITION BY id ORDER BY log_partition, log_offset) = 1
), w AS (SELECT unnest($wanted::BIGINT[]) AS nid)
SELECT w.nid AS id, min(m.created_at) AS read_at FROM w JOIN m
  ON (m.ids IS NULL AND m.through >= w.nid) OR (m.ids IS NOT NULL AND list_contains(CAST(m.ids AS BIGINT[]), w.nid))
GROUP BY w.nid`,
      { payer, wanted: ids(wanted) },
    )
    for (const r of rows) out.set(Number(r.id), String(r.read_at))
    return out
  }
}
