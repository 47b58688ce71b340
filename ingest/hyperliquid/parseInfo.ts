/**
 * Hyperliquid wire payloads → typed values. This is the edge where decimal strings become numbers.
 *
 * Reference rules (../shared/reference/hyperliquid-api.md §1): "Prices, sizes, rates, USD amounts: decimal strings";
 * "optional fields appear only when set (isDelisted, onlyIsolated, …); inactive markets report null for premium,
 * midPx, impactPxs"; "Parsers must tolerate unknown and missing optional fields." So: required fields that are
 * missing or malformed raise HL_BAD_RESPONSE naming the JSON path; optional ones become null; unknown keys are ignored.
 */
import { HyperliquidError } from './HyperliquidError.ts'

// ---------- parsed shapes ----------

export interface HlAssetMeta {
  name: string
  szDecimals: number | null
  maxLeverage: number | null
  isDelisted: boolean
  onlyIsolated: boolean
}

/** Perp asset context. Every field is nullable: idle markets carry nulls and spot contexts lack the perp fields. */
export interface HlAssetCtx {
  /** Hourly funding rate currently accruing (fraction). */
  funding: number | null
  /** Base units. */
  openInterest: number | null
  oraclePx: number | null
  markPx: number | null
  midPx: number | null
  premium: number | null
  prevDayPx: number | null
  dayNtlVlm: number | null
  dayBaseVlm: number | null
  impactPxs: [number, number] | null
}

export interface HlMarket {
  meta: HlAssetMeta
  /** Null when the venue returned fewer contexts than universe entries. */
  ctx: HlAssetCtx | null
}

export interface HlMetaAndAssetCtxs {
  /** In universe order (= asset id). */
  markets: HlMarket[]
}

export type HlMids = Record<string, number>

export interface HlLevel {
  px: number
  sz: number
  /** Number of orders at the level. */
  n: number
}

/**
 * What a book tick takes of an l2Book: the best level of each side and each side's depth (USD notional Σ px·sz over
 * every level the venue sent, left to right).
 */
export interface HlBookTop {
  coin: string
  /** Venue time of the snapshot, epoch ms. */
  time: number
  bidPx: number
  bidSz: number
  askPx: number
  askSz: number
  bidDepthUsd: number
  askDepthUsd: number
}

export interface HlBook {
  coin: string
  /** Venue time of the snapshot, epoch ms. */
  time: number
  /** Best first (descending px). */
  bids: HlLevel[]
  /** Best first (ascending px). */
  asks: HlLevel[]
}

export interface HlCandle {
  coin: string
  interval: string
  /** `t`, epoch ms. */
  openTime: number
  /** `T`, inclusive: openTime + interval − 1. */
  closeTime: number
  open: number
  high: number
  low: number
  close: number
  /** Base units. */
  volume: number
  trades: number | null
}

export interface HlFundingRow {
  coin: string
  time: number
  fundingRate: number
  premium: number | null
}

export interface HlPredictedVenue {
  /** 'HlPerp', 'BinPerp', 'BybitPerp', … */
  venue: string
  fundingRate: number
  nextFundingTime: number
  /** Absent in older responses. */
  fundingIntervalHours: number | null
}

export interface HlPredictedFunding {
  coin: string
  /** Null venue entries are dropped. */
  venues: HlPredictedVenue[]
}

export interface HlTrade {
  coin: string
  /** Aggressor side: 'B' buy, 'A' sell. */
  side: 'B' | 'A'
  px: number
  sz: number
  time: number
  hash: string | null
  /** 50-bit trade id, as a string (JSON-safe). */
  tid: string | null
  users: [string, string] | null
}

export interface HlActiveAssetCtx {
  coin: string
  ctx: HlAssetCtx
}

export interface HlLeverage {
  type: 'cross' | 'isolated'
  value: number
  rawUsd: number | null
}

export interface HlCumFunding {
  allTime: number
  sinceChange: number
  sinceOpen: number
}

export interface HlPosition {
  coin: string
  /** Signed size: negative = short. */
  szi: number
  entryPx: number | null
  positionValue: number
  unrealizedPnl: number
  returnOnEquity: number | null
  liquidationPx: number | null
  marginUsed: number
  maxLeverage: number | null
  leverage: HlLeverage | null
  cumFunding: HlCumFunding | null
}

export interface HlMarginSummary {
  accountValue: number
  totalMarginUsed: number
  totalNtlPos: number
  totalRawUsd: number
}

export interface HlClearinghouseState {
  positions: HlPosition[]
  marginSummary: HlMarginSummary
  crossMarginSummary: HlMarginSummary | null
  crossMaintenanceMarginUsed: number | null
  withdrawable: number
  time: number | null
}

export interface HlFillLiquidation {
  liquidatedUser: string | null
  markPx: number | null
  method: string | null
}

export interface HlFill {
  coin: string
  px: number
  sz: number
  side: 'B' | 'A'
  time: number
  startPosition: number | null
  dir: string | null
  closedPnl: number | null
  hash: string | null
  oid: number | null
  /** True when the fill was the taker. */
  crossed: boolean | null
  /** Negative = rebate. */
  fee: number | null
  feeToken: string | null
  builderFee: number | null
  tid: string | null
  liquidation: HlFillLiquidation | null
}

export interface HlUserFunding {
  time: number
  hash: string | null
  coin: string
  usdc: number
  szi: number
  fundingRate: number
  nSamples: number | null
}

/** A ledger delta keeps the venue's keys; the known decimal fields are converted to numbers. */
export interface HlLedgerUpdate {
  time: number
  hash: string | null
  type: string
  delta: Record<string, unknown>
}

// ---------- primitives ----------

const DECIMAL = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/

/**
 * The hot path's decimal: the value as a number when it is a finite number or a string DECIMAL accepts, else null,
 * with no error path built. A book frame carries 80 of these (the websocket stream's most frequent message); building
 * each field's JSON path for an error that almost never happens cost more than parsing it. The caller falls back to
 * the checked parser, which names the field, only when something is wrong.
 */
function quickDec(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null
  return typeof v === 'string' ? decimalOf(v) : null
}

/** Exact powers of ten: every one up to 1e22 is a double. */
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k)

/**
 * A DECIMAL string's value, or null. Plain decimals of at most 15 digits (every price and size the venue sends) take
 * Clinger's fast path: the digits as an integer below 2^53 and 10^k are both exact doubles, so their quotient is the
 * correctly rounded value, the same double Number() gives, without the regular expression or Number's general parser.
 * Anything else (an exponent, more digits) goes the general way.
 */
function decimalOf(v: string): number | null {
  const len = v.length
  let i = v.charCodeAt(0) === 45 ? 1 : 0
  const negative = i === 1
  let mantissa = 0
  let digits = 0
  let fraction = -1
  for (; i < len; i++) {
    const c = v.charCodeAt(i)
    if (c >= 48 && c <= 57) {
      mantissa = mantissa * 10 + (c - 48)
      digits++
      if (fraction >= 0) fraction++
    } else if (c === 46 && fraction < 0 && digits > 0) fraction = 0
    else return generalDecimal(v)
  }
  if (digits === 0 || fraction === 0) return null
  if (digits > 15) return generalDecimal(v)
  const n = fraction > 0 ? mantissa / POW10[fraction]! : mantissa
  return negative ? -n : n
}

function generalDecimal(v: string): number | null {
  if (!DECIMAL.test(v)) return null
  const n = Number(v)
  return Number.isFinite(n) ? n : null
}

function bad(path: string, message: string): never {
  throw new HyperliquidError('HL_BAD_RESPONSE', `response${path}: ${message}`, { path })
}

function describe(v: unknown): string {
  const s = JSON.stringify(v)
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 60)}…` : s
}

export function dec(v: unknown, path: string): number {
  if (typeof v === 'number' && Number.isFinite(v)) return v
  const n = typeof v === 'string' ? decimalOf(v) : null
  return n ?? bad(path, `expected a decimal, got ${describe(v)}`)
}

export function optDec(v: unknown, path: string): number | null {
  return v === undefined || v === null ? null : dec(v, path)
}

function int(v: unknown, path: string): number {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v
  return bad(path, `expected an integer, got ${describe(v)}`)
}

function optInt(v: unknown, path: string): number | null {
  return v === undefined || v === null ? null : int(v, path)
}

function str(v: unknown, path: string): string {
  if (typeof v === 'string' && v.length > 0) return v
  return bad(path, `expected a non-empty string, got ${describe(v)}`)
}

function optStr(v: unknown, path: string): string | null {
  return v === undefined || v === null ? null : typeof v === 'string' ? v : bad(path, `expected a string, got ${describe(v)}`)
}

function optBool(v: unknown, path: string): boolean | null {
  return v === undefined || v === null ? null : typeof v === 'boolean' ? v : bad(path, `expected a boolean, got ${describe(v)}`)
}

function obj(v: unknown, path: string): Record<string, unknown> {
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>
  return bad(path, `expected an object, got ${describe(v)}`)
}

function arr(v: unknown, path: string): unknown[] {
  if (Array.isArray(v)) return v
  return bad(path, `expected an array, got ${describe(v)}`)
}

function side(v: unknown, path: string): 'B' | 'A' {
  if (v === 'B' || v === 'A') return v
  return bad(path, `expected side 'B' or 'A', got ${describe(v)}`)
}

/** tid is an integer below 2^50 on the wire; kept as a string so 64-bit-looking ids stay JSON-safe downstream. */
function optId(v: unknown, path: string): string | null {
  if (v === undefined || v === null) return null
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v)
  if (typeof v === 'string' && /^\d+$/.test(v)) return v
  return bad(path, `expected an integer id, got ${describe(v)}`)
}

// ---------- market data ----------

export function parseAssetMeta(v: unknown, path: string): HlAssetMeta {
  const o = obj(v, path)
  return {
    name: str(o.name, `${path}/name`),
    szDecimals: optInt(o.szDecimals, `${path}/szDecimals`),
    maxLeverage: optDec(o.maxLeverage, `${path}/maxLeverage`),
    isDelisted: optBool(o.isDelisted, `${path}/isDelisted`) ?? false,
    onlyIsolated: optBool(o.onlyIsolated, `${path}/onlyIsolated`) ?? false,
  }
}

export function parseAssetCtx(v: unknown, path: string): HlAssetCtx {
  const o = obj(v, path)
  let impactPxs: [number, number] | null = null
  if (o.impactPxs !== undefined && o.impactPxs !== null) {
    const a = arr(o.impactPxs, `${path}/impactPxs`)
    if (a.length !== 2) bad(`${path}/impactPxs`, 'expected two prices')
    impactPxs = [dec(a[0], `${path}/impactPxs/0`), dec(a[1], `${path}/impactPxs/1`)]
  }
  return {
    funding: optDec(o.funding, `${path}/funding`),
    openInterest: optDec(o.openInterest, `${path}/openInterest`),
    oraclePx: optDec(o.oraclePx, `${path}/oraclePx`),
    markPx: optDec(o.markPx, `${path}/markPx`),
    midPx: optDec(o.midPx, `${path}/midPx`),
    premium: optDec(o.premium, `${path}/premium`),
    prevDayPx: optDec(o.prevDayPx, `${path}/prevDayPx`),
    dayNtlVlm: optDec(o.dayNtlVlm, `${path}/dayNtlVlm`),
    dayBaseVlm: optDec(o.dayBaseVlm, `${path}/dayBaseVlm`),
    impactPxs,
  }
}

export function parseMetaAndAssetCtxs(v: unknown): HlMetaAndAssetCtxs {
  const pair = arr(v, '')
  if (pair.length < 2) bad('', 'expected [meta, assetCtxs]')
  const meta = obj(pair[0], '/0')
  const universe = arr(meta.universe, '/0/universe')
  const ctxs = arr(pair[1], '/1')
  return {
    markets: universe.map((u, i) => ({
      meta: parseAssetMeta(u, `/0/universe/${i}`),
      ctx: i < ctxs.length ? parseAssetCtx(ctxs[i], `/1/${i}`) : null,
    })),
  }
}

export function parseAllMids(v: unknown): HlMids {
  const o = obj(v, '')
  const mids: HlMids = {}
  for (const [coin, px] of Object.entries(o)) mids[coin] = dec(px, `/${coin}`)
  return mids
}

function parseLevels(v: unknown, path: string): HlLevel[] {
  return quickLevels(v) ?? checkedLevels(v, path)
}

/** The levels when every one is well formed, else null (then checkedLevels names what is wrong). */
function quickLevels(v: unknown): HlLevel[] | null {
  if (!Array.isArray(v)) return null
  const out = new Array<HlLevel>(v.length)
  for (let i = 0; i < v.length; i++) {
    const l = v[i] as { px?: unknown; sz?: unknown; n?: unknown } | null
    if (typeof l !== 'object' || l === null || Array.isArray(l)) return null
    const px = quickDec(l.px)
    const sz = quickDec(l.sz)
    if (px === null || sz === null) return null
    const n = l.n
    if (n !== undefined && n !== null && !(typeof n === 'number' && Number.isSafeInteger(n))) return null
    out[i] = { px, sz, n: (n as number | null | undefined) ?? 0 }
  }
  return out
}

function checkedLevels(v: unknown, path: string): HlLevel[] {
  return arr(v, path).map((l, i) => {
    const o = obj(l, `${path}/${i}`)
    return { px: dec(o.px, `${path}/${i}/px`), sz: dec(o.sz, `${path}/${i}/sz`), n: optInt(o.n, `${path}/${i}/n`) ?? 0 }
  })
}

export function parseBook(v: unknown, path = ''): HlBook {
  const o = obj(v, path)
  const levels = arr(o.levels, `${path}/levels`)
  if (levels.length !== 2) bad(`${path}/levels`, 'expected [bids, asks]')
  return {
    coin: str(o.coin, `${path}/coin`),
    time: int(o.time, `${path}/time`),
    bids: parseLevels(levels[0], `${path}/levels/0`),
    asks: parseLevels(levels[1], `${path}/levels/1`),
  }
}

/** A book's top and depths (HlBookTop), or null when a side is empty (no top). */
export function bookTopOf(book: HlBook): HlBookTop | null {
  const bid = book.bids[0]
  const ask = book.asks[0]
  if (!bid || !ask) return null
  return { coin: book.coin, time: book.time, bidPx: bid.px, bidSz: bid.sz, askPx: ask.px, askSz: ask.sz, bidDepthUsd: depthUsd(book.bids), askDepthUsd: depthUsd(book.asks) }
}

/**
 * USD notional Σ px·sz of one side's levels, left to right (scanBookFrame sums in the same order, so both give the same
 * double). At module level, not a closure: tsx (esbuild keepNames) wraps every closure it creates in a __name() call
 * that defines a property, which cost the book path some 3 % of the connector's time (bench/venue.ts profile).
 */
function depthUsd(levels: readonly HlLevel[]): number {
  let s = 0
  for (let i = 0; i < levels.length; i++) s += levels[i]!.px * levels[i]!.sz
  return s
}

/** One candle (candleSnapshot element, or the websocket `candle` channel's data). */
export function parseCandle(v: unknown, path = ''): HlCandle {
  const o = obj(v, path)
  return {
    coin: str(o.s, `${path}/s`),
    interval: str(o.i, `${path}/i`),
    openTime: int(o.t, `${path}/t`),
    closeTime: int(o.T, `${path}/T`),
    open: dec(o.o, `${path}/o`),
    high: dec(o.h, `${path}/h`),
    low: dec(o.l, `${path}/l`),
    close: dec(o.c, `${path}/c`),
    volume: dec(o.v, `${path}/v`),
    trades: optInt(o.n, `${path}/n`),
  }
}

export function parseCandles(v: unknown): HlCandle[] {
  return arr(v, '').map((c, i) => parseCandle(c, `/${i}`))
}

export function parseFundingHistory(v: unknown): HlFundingRow[] {
  return arr(v, '').map((r, i) => {
    const o = obj(r, `/${i}`)
    return {
      coin: str(o.coin, `/${i}/coin`),
      time: int(o.time, `/${i}/time`),
      fundingRate: dec(o.fundingRate, `/${i}/fundingRate`),
      premium: optDec(o.premium, `/${i}/premium`),
    }
  })
}

export function parsePredictedFundings(v: unknown): HlPredictedFunding[] {
  return arr(v, '').map((entry, i) => {
    const pair = arr(entry, `/${i}`)
    const coin = str(pair[0], `/${i}/0`)
    const venues: HlPredictedVenue[] = []
    arr(pair[1] ?? [], `/${i}/1`).forEach((ve, j) => {
      const p = `/${i}/1/${j}`
      const vp = arr(ve, p)
      if (vp[1] === null || vp[1] === undefined) return
      const o = obj(vp[1], `${p}/1`)
      venues.push({
        venue: str(vp[0], `${p}/0`),
        fundingRate: dec(o.fundingRate, `${p}/1/fundingRate`),
        nextFundingTime: int(o.nextFundingTime, `${p}/1/nextFundingTime`),
        fundingIntervalHours: optDec(o.fundingIntervalHours, `${p}/1/fundingIntervalHours`),
      })
    })
    return { coin, venues }
  })
}

export function parseTrades(v: unknown, path = ''): HlTrade[] {
  return arr(v, path).map((t, i) => {
    const p = `${path}/${i}`
    const o = obj(t, p)
    let users: [string, string] | null = null
    if (Array.isArray(o.users) && o.users.length === 2) users = [String(o.users[0]), String(o.users[1])]
    return {
      coin: str(o.coin, `${p}/coin`),
      side: side(o.side, `${p}/side`),
      px: dec(o.px, `${p}/px`),
      sz: dec(o.sz, `${p}/sz`),
      time: int(o.time, `${p}/time`),
      hash: optStr(o.hash, `${p}/hash`),
      tid: optId(o.tid, `${p}/tid`),
      users,
    }
  })
}

export function parseActiveAssetCtx(v: unknown, path = ''): HlActiveAssetCtx {
  const o = obj(v, path)
  return { coin: str(o.coin, `${path}/coin`), ctx: parseAssetCtx(o.ctx, `${path}/ctx`) }
}

// ---------- wallet data ----------

function parseMarginSummary(v: unknown, path: string): HlMarginSummary {
  const o = obj(v, path)
  return {
    accountValue: dec(o.accountValue, `${path}/accountValue`),
    totalMarginUsed: dec(o.totalMarginUsed, `${path}/totalMarginUsed`),
    totalNtlPos: dec(o.totalNtlPos, `${path}/totalNtlPos`),
    totalRawUsd: dec(o.totalRawUsd, `${path}/totalRawUsd`),
  }
}

export function parseClearinghouseState(v: unknown): HlClearinghouseState {
  const o = obj(v, '')
  const positions = arr(o.assetPositions ?? [], '/assetPositions').map((ap, i) => {
    const p = `/assetPositions/${i}/position`
    const pos = obj(obj(ap, `/assetPositions/${i}`).position, p)
    let leverage: HlLeverage | null = null
    if (pos.leverage !== undefined && pos.leverage !== null) {
      const l = obj(pos.leverage, `${p}/leverage`)
      const type = l.type
      if (type !== 'cross' && type !== 'isolated') bad(`${p}/leverage/type`, `expected 'cross' or 'isolated', got ${describe(type)}`)
      leverage = { type, value: dec(l.value, `${p}/leverage/value`), rawUsd: optDec(l.rawUsd, `${p}/leverage/rawUsd`) }
    }
    let cumFunding: HlCumFunding | null = null
    if (pos.cumFunding !== undefined && pos.cumFunding !== null) {
      const c = obj(pos.cumFunding, `${p}/cumFunding`)
      cumFunding = {
        allTime: dec(c.allTime, `${p}/cumFunding/allTime`),
        sinceChange: dec(c.sinceChange, `${p}/cumFunding/sinceChange`),
        sinceOpen: dec(c.sinceOpen, `${p}/cumFunding/sinceOpen`),
      }
    }
    return {
      coin: str(pos.coin, `${p}/coin`),
      szi: dec(pos.szi, `${p}/szi`),
      entryPx: optDec(pos.entryPx, `${p}/entryPx`),
      positionValue: dec(pos.positionValue, `${p}/positionValue`),
      unrealizedPnl: dec(pos.unrealizedPnl, `${p}/unrealizedPnl`),
      returnOnEquity: optDec(pos.returnOnEquity, `${p}/returnOnEquity`),
      liquidationPx: optDec(pos.liquidationPx, `${p}/liquidationPx`),
      marginUsed: dec(pos.marginUsed, `${p}/marginUsed`),
      maxLeverage: optDec(pos.maxLeverage, `${p}/maxLeverage`),
      leverage,
      cumFunding,
    }
  })
  return {
    positions,
    marginSummary: parseMarginSummary(o.marginSummary, '/marginSummary'),
    crossMarginSummary:
      o.crossMarginSummary === undefined || o.crossMarginSummary === null
        ? null
        : parseMarginSummary(o.crossMarginSummary, '/crossMarginSummary'),
    crossMaintenanceMarginUsed: optDec(o.crossMaintenanceMarginUsed, '/crossMaintenanceMarginUsed'),
    withdrawable: dec(o.withdrawable, '/withdrawable'),
    time: optInt(o.time, '/time'),
  }
}

export function parseUserFills(v: unknown): HlFill[] {
  return arr(v, '').map((f, i) => {
    const p = `/${i}`
    const o = obj(f, p)
    let liquidation: HlFillLiquidation | null = null
    if (o.liquidation !== undefined && o.liquidation !== null) {
      const l = obj(o.liquidation, `${p}/liquidation`)
      liquidation = {
        liquidatedUser: optStr(l.liquidatedUser, `${p}/liquidation/liquidatedUser`),
        markPx: optDec(l.markPx, `${p}/liquidation/markPx`),
        method: optStr(l.method, `${p}/liquidation/method`),
      }
    }
    return {
      coin: str(o.coin, `${p}/coin`),
      px: dec(o.px, `${p}/px`),
      sz: dec(o.sz, `${p}/sz`),
      side: side(o.side, `${p}/side`),
      time: int(o.time, `${p}/time`),
      startPosition: optDec(o.startPosition, `${p}/startPosition`),
      dir: optStr(o.dir, `${p}/dir`),
      closedPnl: optDec(o.closedPnl, `${p}/closedPnl`),
      hash: optStr(o.hash, `${p}/hash`),
      oid: optInt(o.oid, `${p}/oid`),
      crossed: optBool(o.crossed, `${p}/crossed`),
      fee: optDec(o.fee, `${p}/fee`),
      feeToken: optStr(o.feeToken, `${p}/feeToken`),
      builderFee: optDec(o.builderFee, `${p}/builderFee`),
      tid: optId(o.tid, `${p}/tid`),
      liquidation,
    }
  })
}

export function parseUserFunding(v: unknown): HlUserFunding[] {
  return arr(v, '').map((r, i) => {
    const p = `/${i}`
    const o = obj(r, p)
    const d = obj(o.delta, `${p}/delta`)
    return {
      time: int(o.time, `${p}/time`),
      hash: optStr(o.hash, `${p}/hash`),
      coin: str(d.coin, `${p}/delta/coin`),
      usdc: dec(d.usdc, `${p}/delta/usdc`),
      szi: dec(d.szi, `${p}/delta/szi`),
      fundingRate: dec(d.fundingRate, `${p}/delta/fundingRate`),
      nSamples: optInt(d.nSamples, `${p}/delta/nSamples`),
    }
  })
}

/** Decimal-string fields across ledger delta types (reference §2 table). */
const LEDGER_DECIMAL_KEYS = new Set([
  'usdc',
  'amount',
  'usdcValue',
  'fee',
  'nativeTokenFee',
  'accountValue',
  'liquidatedNtlPos',
  'basis',
  'commission',
  'closingCost',
  'requestedUsd',
  'netWithdrawnUsd',
])

export function parseLedgerUpdates(v: unknown): HlLedgerUpdate[] {
  return arr(v, '').map((r, i) => {
    const p = `/${i}`
    const o = obj(r, p)
    const d = obj(o.delta, `${p}/delta`)
    const delta: Record<string, unknown> = {}
    for (const [k, val] of Object.entries(d)) {
      if (LEDGER_DECIMAL_KEYS.has(k)) delta[k] = optDec(val, `${p}/delta/${k}`)
      else if (k === 'liquidatedPositions' && Array.isArray(val)) {
        delta[k] = val.map((lp, j) => {
          const lo = obj(lp, `${p}/delta/${k}/${j}`)
          return { coin: str(lo.coin, `${p}/delta/${k}/${j}/coin`), szi: dec(lo.szi, `${p}/delta/${k}/${j}/szi`) }
        })
      } else delta[k] = val
    }
    return { time: int(o.time, `${p}/time`), hash: optStr(o.hash, `${p}/hash`), type: str(d.type, `${p}/delta/type`), delta }
  })
}
