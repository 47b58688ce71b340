/**
 * Record values on the ticks topic. A value is the tick's JSON, either bare or wrapped in an envelope that names its
 * position on the tape it was replayed from, so a replay can resume after the last record the log holds:
 *
 *   bare:     {"v":1,"kind":"mid",...}
 *   envelope: {"seq":41,"tape":"btc-2024-01","tick":{"v":1,"kind":"mid",...}}
 *
 * `seq` is the tape line number (1-based, as the replayer counts it); `tape` identifies the tape file.
 * Both shapes decode to the same DecodedTick; consumers that do not care about replay position ignore seq/tape.
 */
import { TickValidationError, tickLine, validateTick, type Tick } from '../ingest/Tick.ts'

export interface TickEnvelope {
  seq: number
  tape: string
  tick: Tick
}

export interface DecodedTick {
  tick: Tick
  /** Tape line number; null for a bare tick. */
  seq: number | null
  /** Tape id; null for a bare tick. */
  tape: string | null
}

/** Bare tick value: the tape line's bytes. */
export function encodeTick(tick: Tick): Buffer {
  return Buffer.from(tickLine(tick), 'utf8')
}

/**
 * Envelope value; key order is fixed (seq, tape, tick) so one envelope always yields the same bytes. `tickJson` is
 * the tick's JSON text when the caller already holds it (a tape line the tape reader parsed into `tick`), which
 * spares serializing the tick again.
 */
export function encodeTickEnvelope(envelope: TickEnvelope, tickJson?: string): Buffer {
  if (!Number.isSafeInteger(envelope.seq) || envelope.seq < 0) {
    throw new TickValidationError('/seq', 'must be a non-negative safe integer')
  }
  if (typeof envelope.tape !== 'string' || envelope.tape.length === 0) {
    throw new TickValidationError('/tape', 'must be a non-empty string')
  }
  return Buffer.from(`{"seq":${envelope.seq},"tape":${JSON.stringify(envelope.tape)},"tick":${tickJson ?? tickLine(envelope.tick)}}`, 'utf8')
}

function isEnvelope(value: unknown): value is { seq: unknown; tape: unknown; tick: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && 'tick' in value && !('kind' in value)
}

/**
 * Decodes and validates one record value (either shape). Throws TickValidationError naming the field path
 * (envelope fields as /seq, /tape; tick fields under /tick/... when enveloped) or a SyntaxError for bad JSON.
 */
export function decodeTickValue(value: Buffer | string): DecodedTick {
  const parsed: unknown = JSON.parse(typeof value === 'string' ? value : value.toString('utf8'))
  if (!isEnvelope(parsed)) return { tick: validateTick(parsed), seq: null, tape: null }
  const extra = Object.keys(parsed).find((k) => k !== 'seq' && k !== 'tape' && k !== 'tick')
  if (extra !== undefined) throw new TickValidationError(`/${extra}`, 'is not an envelope field')
  if (typeof parsed.seq !== 'number' || !Number.isSafeInteger(parsed.seq) || parsed.seq < 0) {
    throw new TickValidationError('/seq', 'must be a non-negative safe integer')
  }
  if (typeof parsed.tape !== 'string' || parsed.tape.length === 0) {
    throw new TickValidationError('/tape', 'must be a non-empty string')
  }
  try {
    return { tick: validateTick(parsed.tick), seq: parsed.seq, tape: parsed.tape }
  } catch (err) {
    if (err instanceof TickValidationError) throw new TickValidationError(`/tick${err.path}`, err.message.replace(/^[^:]*: /, ''))
    throw err
  }
}

// Recent decodes, one slot per (partition, offset) modulo the table size, valid only for the very value buffer they
// were decoded from. In one process every stream processor (sink, engine, market state) reads every tick, and the
// embedded log hands them the same record buffers, so each value is parsed and validated once while the consumers
// stay within RECENT_SLOTS / partitions records of each other. A miss (another log, a consumer far behind) decodes.
const RECENT_SLOTS = 1 << 15
const recentValues: (Buffer | undefined)[] = new Array<Buffer | undefined>(RECENT_SLOTS)
const recentDecoded: (DecodedTick | undefined)[] = new Array<DecodedTick | undefined>(RECENT_SLOTS)

/**
 * decodeTickValue of a consumed record's value. A record whose value buffer was decoded moments ago gets the same
 * DecodedTick object: it is shared, so it is read-only (as every tick downstream is).
 */
export function decodeTickRecord(record: { partition: number; offset: number; value: Buffer }): DecodedTick {
  const slot = (record.offset * 4 + record.partition) & (RECENT_SLOTS - 1)
  if (recentValues[slot] === record.value) return recentDecoded[slot]!
  const decoded = decodeTickValue(record.value)
  recentValues[slot] = record.value
  recentDecoded[slot] = decoded
  return decoded
}
