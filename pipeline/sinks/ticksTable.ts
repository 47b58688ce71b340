/**
 * The ticks topic as the `ticks` table: one row per tick, one column per tick field (shared across kinds where
 * the meaning is the same, e.g. `price` for mid/mark/index/liquidation/trade), NULL where a kind has no such field.
 * Fields without a column (a universe snapshot's `assets`, fields added by a later schema version) go to
 * `payload` as JSON, so nothing in a record is dropped. tape_seq/tape_id come from the replay envelope
 * (pipeline/TickEnvelope.ts) and are NULL for bare ticks.
 */
import type { ConsumedRecord } from '../log/EventLog.ts'
import { decodeTickRecord } from '../TickEnvelope.ts'
import { parseInstant, tickTime, type Tick, type TickKind } from '../../ingest/Tick.ts'
import type { CellValue, ColumnSpec, MappedRecord, TopicTable } from './TopicTable.ts'

/** The storage directory of ticks: the default topic name, whatever SVC_TOPIC_TICKS says. */
export const TICKS_DIR = 'venue.ticks'

export const TICKS_COLUMNS = [
  { name: 'ts', type: 'TIMESTAMPTZ' },
  { name: 'received_at', type: 'TIMESTAMPTZ' },
  { name: 'kind', type: 'VARCHAR' },
  { name: 'instrument', type: 'VARCHAR' },
  { name: 'source', type: 'VARCHAR' },
  { name: 'provider', type: 'VARCHAR' },
  { name: 'quality', type: 'VARCHAR' },
  { name: 'interval', type: 'VARCHAR' },
  { name: 'open_time', type: 'TIMESTAMPTZ' },
  { name: 'open', type: 'DOUBLE' },
  { name: 'high', type: 'DOUBLE' },
  { name: 'low', type: 'DOUBLE' },
  { name: 'close', type: 'DOUBLE' },
  { name: 'volume', type: 'DOUBLE' },
  { name: 'volume_unit', type: 'VARCHAR' },
  { name: 'price', type: 'DOUBLE' },
  { name: 'rate', type: 'DOUBLE' },
  { name: 'interval_hours', type: 'DOUBLE' },
  { name: 'premium', type: 'DOUBLE' },
  { name: 'next_funding_at', type: 'TIMESTAMPTZ' },
  { name: 'oi', type: 'DOUBLE' },
  { name: 'oi_unit', type: 'VARCHAR' },
  { name: 'bid', type: 'DOUBLE' },
  { name: 'ask', type: 'DOUBLE' },
  { name: 'bid_size', type: 'DOUBLE' },
  { name: 'ask_size', type: 'DOUBLE' },
  { name: 'bid_depth_usd', type: 'DOUBLE' },
  { name: 'ask_depth_usd', type: 'DOUBLE' },
  { name: 'side', type: 'VARCHAR' },
  { name: 'size', type: 'DOUBLE' },
  { name: 'notional_usd', type: 'DOUBLE' },
  { name: 'trade_id', type: 'VARCHAR' },
  { name: 'payload', type: 'JSON' },
  { name: 'tape_seq', type: 'BIGINT' },
  { name: 'tape_id', type: 'VARCHAR' },
] as const satisfies readonly ColumnSpec[]

type TicksColumn = (typeof TICKS_COLUMNS)[number]['name']

const COLUMN_INDEX = new Map<string, number>(TICKS_COLUMNS.map((c, i) => [c.name, i]))
const TIMESTAMP_COLUMNS = new Set<string>(TICKS_COLUMNS.filter((c) => c.type === 'TIMESTAMPTZ').map((c) => c.name))

/** Fields every kind carries; mapped explicitly (asset is the partition column). */
const COMMON_FIELDS = new Set(['v', 'kind', 'asset', 'instrument', 'provenance'])

/** Kind-specific tick field → column. Fields of a kind missing here land in `payload`. */
const FIELD_COLUMNS: Record<TickKind, Record<string, TicksColumn>> = {
  bar: {
    interval: 'interval',
    open_time: 'open_time',
    open: 'open',
    high: 'high',
    low: 'low',
    close: 'close',
    volume: 'volume',
    volume_unit: 'volume_unit',
  },
  mid: { price: 'price' },
  mark: { price: 'price' },
  index: { price: 'price' },
  funding: { rate: 'rate', interval_hours: 'interval_hours', premium: 'premium' },
  predicted_funding: { rate: 'rate', interval_hours: 'interval_hours', next_funding_at: 'next_funding_at' },
  open_interest: { value: 'oi', unit: 'oi_unit' },
  book_top: {
    bid: 'bid',
    ask: 'ask',
    bid_size: 'bid_size',
    ask_size: 'ask_size',
    bid_depth_usd: 'bid_depth_usd',
    ask_depth_usd: 'ask_depth_usd',
  },
  liquidation: { side: 'side', price: 'price', size: 'size', notional_usd: 'notional_usd' },
  trade: { side: 'side', price: 'price', size: 'size', trade_id: 'trade_id' },
  universe: {},
}

function columnIndex(column: TicksColumn): number {
  const i = COLUMN_INDEX.get(column)
  if (i === undefined) throw new Error(`unknown ticks column ${column}`)
  return i
}

/** A cell: NULL for null/undefined, a Date for TIMESTAMPTZ columns (ISO text parsed as Date.parse does), else the value. */
function cell(value: unknown, timestamp: boolean): CellValue {
  if (value === null || value === undefined) return null
  return timestamp ? new Date(parseInstant(String(value))) : (value as CellValue)
}

const TS = columnIndex('ts')
const RECEIVED_AT = columnIndex('received_at')
const KIND = columnIndex('kind')
const INSTRUMENT = columnIndex('instrument')
const SOURCE = columnIndex('source')
const PROVIDER = columnIndex('provider')
const QUALITY = columnIndex('quality')
const PAYLOAD = columnIndex('payload')
const TAPE_SEQ = columnIndex('tape_seq')
const TAPE_ID = columnIndex('tape_id')

/** Per kind: tick field → [column index, is a TIMESTAMPTZ column] (resolved once, not per row). */
const FIELD_CELLS = Object.fromEntries(
  Object.entries(FIELD_COLUMNS).map(([kind, fields]) => [
    kind,
    new Map(Object.entries(fields).map(([field, column]) => [field, [columnIndex(column), TIMESTAMP_COLUMNS.has(column)] as const])),
  ]),
) as Record<TickKind, Map<string, readonly [number, boolean]>>

/** One tick (plus its envelope position) as a `ticks` row, in TICKS_COLUMNS order. */
export function tickRow(tick: Tick, tapeSeq: number | null = null, tapeId: string | null = null): CellValue[] {
  const row: CellValue[] = new Array<CellValue>(TICKS_COLUMNS.length).fill(null)
  const p = tick.provenance
  row[TS] = cell(p.timestamp, true)
  row[RECEIVED_AT] = cell(p.received_at, true)
  row[KIND] = cell(tick.kind, false)
  row[INSTRUMENT] = cell(tick.instrument, false)
  row[SOURCE] = cell(p.source, false)
  row[PROVIDER] = cell(p.provider, false)
  row[QUALITY] = cell(p.quality, false)
  const fields = FIELD_CELLS[tick.kind]
  let rest: Record<string, unknown> | null = null
  for (const field of Object.keys(tick)) {
    if (COMMON_FIELDS.has(field)) continue
    const value = (tick as unknown as Record<string, unknown>)[field]
    const target = fields.get(field)
    if (target) row[target[0]] = cell(value, target[1])
    else (rest ??= {})[field] = value
  }
  row[PAYLOAD] = rest === null ? null : JSON.stringify(rest)
  row[TAPE_SEQ] = tapeSeq
  row[TAPE_ID] = tapeId
  return row
}

/** The TopicTable of the ticks topic; `topic` is the deployment's topic name (pipeline/topics.ts). */
export function ticksTable(topic: string = TICKS_DIR): TopicTable {
  return {
    topic,
    table: 'ticks',
    dir: TICKS_DIR,
    columns: TICKS_COLUMNS,
    map(record: ConsumedRecord): MappedRecord {
      const { tick, seq, tape } = decodeTickRecord(record)
      return { asset: tick.asset, eventTime: tickTime(tick), row: tickRow(tick, seq, tape) }
    },
  }
}
