/**
 * The local venue's faults: their kinds (types and the JSON Schema a fault, a control body or a script is validated
 * against) and the bookkeeping of what is active: timed faults (silence, outage, a REST status), counted ones (a REST
 * status for the next N requests), the candle revisions that stay (corrections, purges), the script still to fire,
 * and the log of every fault applied.
 *
 * Durations are venue milliseconds: a fault with `forMs` ends when the venue clock has moved that far, so a
 * compressed session (a ScaledClock) scales them with everything else. The effects on sockets (dropping them, bad
 * frames, duplicates, a late trade) are the venue's to carry out; this class only keeps the state.
 */
import { OptionsError, validateOptions } from '../../../common/validation.ts'
import { CANONICAL_ASSETS } from '../../Tick.ts'
import { CANDLE_INTERVAL_NAMES, type CandleInterval, type VenueCandle } from './wire.ts'

export const FAULT_KINDS = [
  'disconnect',
  'silence',
  'rest_status',
  'outage',
  'malformed',
  'duplicate',
  'out_of_order_trades',
  'candle_correction',
  'purge_candles',
] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

export const MALFORMED_VARIANTS = ['invalid_json', 'unknown_channel', 'nan_price', 'negative_size', 'future_candle'] as const
export type MalformedVariant = (typeof MALFORMED_VARIANTS)[number]

export const REST_FAULT_STATUSES = [429, 500, 502, 503] as const

export type VenueFault =
  /** Every websocket connection terminated abruptly (no close frame). */
  | { kind: 'disconnect' }
  /** Connections stay open but nothing at all is sent (no data, no pongs, no acks). */
  | { kind: 'silence'; forMs: number }
  /** /info answers `status` to the next `count` requests, or to every request for `forMs`. */
  | { kind: 'rest_status'; status: (typeof REST_FAULT_STATUSES)[number]; count?: number; forMs?: number }
  /** The venue is down: websockets dropped, upgrades refused, /info answers 503. */
  | { kind: 'outage'; forMs: number }
  /** One bad frame to every connection. */
  | { kind: 'malformed'; variant: MalformedVariant; coin?: string }
  /** The last data frame of each subscription of each connection sent again `count` times (default 1). */
  | { kind: 'duplicate'; count?: number }
  /** A real, already sent trade `lagMs` older than the newest one sent, sent again as a late trade. */
  | { kind: 'out_of_order_trades'; coin: string; lagMs: number }
  /** The newest closed candle of the coin and interval is revised (high raised, volume changed). */
  | { kind: 'candle_correction'; coin: string; interval: CandleInterval }
  /** Candles whose close (T + 1) falls in [from, to] are no longer served by candleSnapshot. */
  | { kind: 'purge_candles'; coin?: string; interval: CandleInterval; from: number; to: number }

export interface ScriptedFault {
  /** Venue ms after the venue started. */
  afterMs: number
  fault: VenueFault
}

export type FaultSource = 'call' | 'control' | 'script'

export interface FaultLogEntry {
  /** 1-based order of application. */
  seq: number
  source: FaultSource
  fault: VenueFault
  venueTime: number
  venueIso: string
  wallTime: number
  wallIso: string
  /** Venue instant a timed fault ends. */
  until?: number
  /** What the fault did (connections dropped, frames sent, the candle revised, …). */
  effect?: Record<string, unknown>
}

export interface ActiveFault {
  kind: FaultKind
  status?: number
  until?: number
  remaining?: number
}

const coin = { type: 'string', enum: [...CANONICAL_ASSETS] } as const
const forMs = { type: 'integer', minimum: 1 } as const
const instant = { type: 'integer', minimum: 0 } as const
const interval = { type: 'string', enum: CANDLE_INTERVAL_NAMES } as const

function kind(name: FaultKind, properties: Record<string, unknown>, required: string[] = []) {
  return {
    if: { properties: { kind: { const: name } }, required: ['kind'] },
    then: { additionalProperties: false, required: ['kind', ...required], properties: { kind: {}, ...properties } },
  }
}

/** One fault, as `venue.fault()`, `POST /_venue/fault` and a script entry take it. */
export const FAULT_SCHEMA = {
  type: 'object',
  required: ['kind'],
  properties: { kind: { enum: [...FAULT_KINDS] } },
  allOf: [
    kind('disconnect', {}),
    kind('silence', { forMs }, ['forMs']),
    kind('rest_status', { status: { enum: [...REST_FAULT_STATUSES] }, count: { type: 'integer', minimum: 1 }, forMs }, ['status']),
    kind('outage', { forMs }, ['forMs']),
    kind('malformed', { variant: { enum: [...MALFORMED_VARIANTS] }, coin }, ['variant']),
    kind('duplicate', { count: { type: 'integer', minimum: 1, maximum: 100 } }),
    kind('out_of_order_trades', { coin, lagMs: { type: 'integer', minimum: 1 } }, ['coin', 'lagMs']),
    kind('candle_correction', { coin, interval }, ['coin', 'interval']),
    kind('purge_candles', { coin, interval, from: instant, to: instant }, ['interval', 'from', 'to']),
  ],
} as const

/** A fault script: `[{ "afterMs": <venue ms after start>, "fault": {...} }, ...]`. */
export const FAULT_SCRIPT_SCHEMA = {
  type: 'array',
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['afterMs', 'fault'],
    properties: { afterMs: { type: 'integer', minimum: 0 }, fault: FAULT_SCHEMA },
  },
} as const

/** The checks a schema cannot say: rest_status takes `count` or `forMs`, exactly one; a purge range is ordered. */
function checkFault(root: string, path: string, f: VenueFault): void {
  if (f.kind === 'rest_status' && (f.count === undefined) === (f.forMs === undefined)) {
    throw OptionsError.at(root, `${path}/count`, 'give count or forMs (exactly one of the two)')
  }
  if (f.kind === 'purge_candles' && f.to < f.from) throw OptionsError.at(root, `${path}/to`, 'must be >= from')
}

interface TimedStatus {
  status: number
  until: number | null
  remaining: number | null
}

interface Correction {
  original: VenueCandle
  corrected: VenueCandle
}

export class LocalVenueFaults {
  readonly log: FaultLogEntry[] = []
  readonly #script: ScriptedFault[]
  readonly #startedAt: number
  #silenceUntil = -Infinity
  #outageUntil = -Infinity
  #statuses: TimedStatus[] = []
  readonly #corrections = new Map<string, Correction>()
  readonly #purges: Array<{ coin: string | null; interval: CandleInterval; from: number; to: number }> = []

  /** `startedAt`: the venue instant the script's `afterMs` counts from. */
  constructor(options: { startedAt: number; script?: ScriptedFault[] }) {
    this.#startedAt = options.startedAt
    this.#script = [...(options.script ?? [])].sort((a, b) => a.afterMs - b.afterMs)
  }

  /** Validates one fault; throws an OptionsError naming the field (`LocalVenue fault/forMs: is required`). */
  static parseFault(value: unknown, root = 'LocalVenue fault'): VenueFault {
    const f = validateOptions<VenueFault>(root, FAULT_SCHEMA, value)
    checkFault(root, '', f)
    return f
  }

  /** Validates a script (the parsed JSON of a --script file). */
  static parseScript(value: unknown, root = 'venue script'): ScriptedFault[] {
    const script = validateOptions<ScriptedFault[]>(root, FAULT_SCRIPT_SCHEMA, value)
    script.forEach((entry, i) => checkFault(root, `/${i}/fault`, entry.fault))
    return script
  }

  /** Scripted faults whose instant has come by `now`, in order; each is handed out once. */
  due(now: number): ScriptedFault[] {
    const out: ScriptedFault[] = []
    while (this.#script.length > 0 && this.#startedAt + this.#script[0]!.afterMs <= now) out.push(this.#script.shift()!)
    return out
  }

  get pendingScript(): readonly ScriptedFault[] {
    return this.#script
  }

  /** Records an applied fault and starts its timed or counted state. */
  record(fault: VenueFault, source: FaultSource, now: number, effect?: Record<string, unknown>): FaultLogEntry {
    let until: number | undefined
    switch (fault.kind) {
      case 'silence':
        until = now + fault.forMs
        this.#silenceUntil = Math.max(this.#silenceUntil, until)
        break
      case 'outage':
        until = now + fault.forMs
        this.#outageUntil = Math.max(this.#outageUntil, until)
        break
      case 'rest_status':
        if (fault.forMs !== undefined) until = now + fault.forMs
        this.#statuses.push({ status: fault.status, until: until ?? null, remaining: fault.count ?? null })
        break
      case 'purge_candles':
        this.#purges.push({ coin: fault.coin ?? null, interval: fault.interval, from: fault.from, to: fault.to })
        break
      default:
        break
    }
    const wall = Date.now()
    const entry: FaultLogEntry = {
      seq: this.log.length + 1,
      source,
      fault,
      venueTime: now,
      venueIso: new Date(now).toISOString(),
      wallTime: wall,
      wallIso: new Date(wall).toISOString(),
      ...(until === undefined ? {} : { until }),
      ...(effect === undefined ? {} : { effect }),
    }
    this.log.push(entry)
    return entry
  }

  silenced(now: number): boolean {
    return now < this.#silenceUntil
  }

  outage(now: number): boolean {
    return now < this.#outageUntil
  }

  /** The status the next /info request must get from an active rest_status fault (a counted one is used up). */
  takeRestStatus(now: number): number | null {
    this.#statuses = this.#statuses.filter((s) => (s.until === null || now < s.until) && (s.remaining === null || s.remaining > 0))
    const s = this.#statuses[0]
    if (!s) return null
    if (s.remaining !== null) s.remaining--
    return s.status
  }

  addCorrection(original: VenueCandle, corrected: VenueCandle): void {
    this.#corrections.set(candleKey(original.coin, original.interval, original.openTime), { original, corrected })
  }

  correction(coin: string, interval: CandleInterval, openTime: number): Correction | undefined {
    return this.#corrections.get(candleKey(coin, interval, openTime))
  }

  /** Whether a purge covers the candle whose close instant (T + 1) is `closeExclusive`. */
  purged(coin: string, interval: CandleInterval, closeExclusive: number): boolean {
    return this.#purges.some((p) => (p.coin === null || p.coin === coin) && p.interval === interval && closeExclusive >= p.from && closeExclusive <= p.to)
  }

  /** The faults in force at `now` (for the state route). */
  active(now: number): ActiveFault[] {
    const out: ActiveFault[] = []
    if (this.silenced(now)) out.push({ kind: 'silence', until: this.#silenceUntil })
    if (this.outage(now)) out.push({ kind: 'outage', until: this.#outageUntil })
    for (const s of this.#statuses) {
      if ((s.until !== null && now >= s.until) || s.remaining === 0) continue
      out.push({ kind: 'rest_status', status: s.status, ...(s.until === null ? {} : { until: s.until }), ...(s.remaining === null ? {} : { remaining: s.remaining }) })
    }
    if (this.#corrections.size > 0) out.push({ kind: 'candle_correction', remaining: this.#corrections.size })
    if (this.#purges.length > 0) out.push({ kind: 'purge_candles', remaining: this.#purges.length })
    return out
  }
}

function candleKey(coin: string, interval: string, openTime: number): string {
  return `${coin}|${interval}|${openTime}`
}
