/**
 * A websocket l2Book frame's top and depths read straight from its text, without JSON.parse.
 *
 * Why: books are most of the stream (two a second per coin: 43,200 of 50,052 frames in two hours of the stand-in) and
 * the largest frames (40 levels), and the connector keeps only the top and the two depth sums of each. JSON.parse built
 * 40 level objects and 80 strings per frame that were garbage at once: in the connector bench's profile the frame's
 * parse, its levels and the garbage collector were most of the connector's time (issue 28's throughput goal).
 *
 * The scanner accepts only the exact shape the venue sends, and only when every value is one the general path
 * (JSON.parse + parseBook + bookTopOf) accepts and reads as the same double:
 *   {"channel":"l2Book","data":{"coin":"<coin>","time":<int>,"levels":[[<level>,…],[<level>,…]]}}
 * with the data's keys and a level's keys (px, sz, n) in any order, each once, no whitespace, no escapes, prices and
 * sizes plain decimal strings of at most 15 digits (Clinger's fast path, as parseInfo's decimalOf), n an integer or
 * null, both sides non-empty. Anything else (an unknown key, a number as a price, an exponent, an empty side, a
 * malformed frame) returns null and the frame goes the general way, which accepts it or names what is wrong: so the
 * fast path can change speed, never an outcome (test/ingest/hyperliquid/scanBookFrame.test.ts checks it against the
 * general path on recorded, generated and mutated frames).
 */
import type { HlBookTop } from './parseInfo.ts'

const PREFIX = '{"channel":"l2Book","data":'
const KEY_PX = '"px":'
const KEY_SZ = '"sz":'
const KEY_N = '"n":'
const QUOTE = 34
const COMMA = 44
const MINUS = 45
const DOT = 46
const COLON = 58
const OPEN_BRACKET = 91
const CLOSE_BRACKET = 93
const OPEN_BRACE = 123
const CLOSE_BRACE = 125
const BACKSLASH = 92
/** Exact powers of ten: every one up to 1e22 is a double. */
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k)
/** Plain decimals of at most this many digits are exact as integers below 2^53 (Clinger's fast path). */
const MAX_DIGITS = 15

/** True when `text` may be a book frame (cheap prefix test before the scan). */
export function isBookFrame(text: string): boolean {
  return text.startsWith(PREFIX)
}

/**
 * One scan over a frame. Fields are the scan's state (a class, not closures: tsx's keepNames wraps every closure it
 * creates in a __name() call, measurable on the stream's most frequent frame).
 */
class Scan {
  pos = PREFIX.length
  /** The value read by the last number() / decimal(). */
  value = 0
  // One side's running top and depth (side()).
  topPx = 0
  topSz = 0
  depth = 0

  constructor(readonly text: string) {}

  top(): HlBookTop | null {
    const t = this.text
    if (t.charCodeAt(this.pos++) !== OPEN_BRACE) return null
    let coin: string | null = null
    let time = Number.NaN
    let sides = 0
    let bidPx = 0
    let bidSz = 0
    let askPx = 0
    let askSz = 0
    let bidDepth = 0
    let askDepth = 0
    for (let first = true; ; first = false) {
      const c = t.charCodeAt(this.pos)
      if (c === CLOSE_BRACE && !first) {
        this.pos++
        break
      }
      if (!first) {
        if (c !== COMMA) return null
        this.pos++
      }
      const key = this.key()
      if (key === 'coin' && coin === null) {
        coin = this.string()
        if (coin === null || coin.length === 0) return null
      } else if (key === 'time' && Number.isNaN(time)) {
        if (!this.integer()) return null
        time = this.value
      } else if (key === 'levels' && sides === 0) {
        if (t.charCodeAt(this.pos++) !== OPEN_BRACKET) return null
        if (!this.side()) return null
        bidPx = this.topPx
        bidSz = this.topSz
        bidDepth = this.depth
        if (t.charCodeAt(this.pos++) !== COMMA) return null
        if (!this.side()) return null
        askPx = this.topPx
        askSz = this.topSz
        askDepth = this.depth
        if (t.charCodeAt(this.pos++) !== CLOSE_BRACKET) return null
        sides = 2
      } else return null
    }
    if (t.charCodeAt(this.pos++) !== CLOSE_BRACE || this.pos !== t.length) return null
    if (coin === null || Number.isNaN(time) || sides !== 2) return null
    return { coin, time, bidPx, bidSz, askPx, askSz, bidDepthUsd: bidDepth, askDepthUsd: askDepth }
  }

  /** `"<name>":` → the name, or null. Names here never hold escapes. */
  private key(): string | null {
    const name = this.string()
    if (name === null || this.text.charCodeAt(this.pos++) !== COLON) return null
    return name
  }

  /** A string without escapes or control characters (else null: JSON.parse decides). */
  private string(): string | null {
    const t = this.text
    if (t.charCodeAt(this.pos) !== QUOTE) return null
    const start = this.pos + 1
    for (let i = start; i < t.length; i++) {
      const c = t.charCodeAt(i)
      if (c === QUOTE) {
        this.pos = i + 1
        return t.slice(start, i)
      }
      if (c === BACKSLASH || c < 0x20) return null
    }
    return null
  }

  /** `[<level>,…]`, non-empty: the first level's px and sz, and Σ px·sz left to right. */
  private side(): boolean {
    const t = this.text
    if (t.charCodeAt(this.pos++) !== OPEN_BRACKET) return false
    this.depth = 0
    for (let i = 0; ; i++) {
      if (!this.level(i === 0)) return false
      const c = t.charCodeAt(this.pos++)
      if (c === CLOSE_BRACKET) return true
      if (c !== COMMA) return false
    }
  }

  /** `{"px":"…","sz":"…","n":…}` in any key order; px and sz required, n optional (an integer or null). */
  private level(first: boolean): boolean {
    const t = this.text
    if (t.charCodeAt(this.pos++) !== OPEN_BRACE) return false
    let px = Number.NaN
    let sz = Number.NaN
    let seenN = false
    for (let k = 0; ; k++) {
      if (k > 0) {
        const c = t.charCodeAt(this.pos++)
        if (c === CLOSE_BRACE) break
        if (c !== COMMA) return false
      }
      // Keys compared in place: 120 key strings a frame would be garbage again.
      if (t.startsWith(KEY_PX, this.pos) && Number.isNaN(px)) {
        this.pos += KEY_PX.length
        if (!this.decimalString()) return false
        px = this.value
      } else if (t.startsWith(KEY_SZ, this.pos) && Number.isNaN(sz)) {
        this.pos += KEY_SZ.length
        if (!this.decimalString()) return false
        sz = this.value
      } else if (t.startsWith(KEY_N, this.pos) && !seenN) {
        this.pos += KEY_N.length
        seenN = true
        if (t.startsWith('null', this.pos)) this.pos += 4
        else if (!this.integer()) return false
      } else return false
    }
    if (Number.isNaN(px) || Number.isNaN(sz)) return false
    if (first) {
      this.topPx = px
      this.topSz = sz
    }
    this.depth += px * sz
    return true
  }

  /** `"<plain decimal>"`: parseInfo's decimalOf fast path (same double), anything else false. */
  private decimalString(): boolean {
    const t = this.text
    if (t.charCodeAt(this.pos) !== QUOTE) return false
    let i = this.pos + 1
    const negative = t.charCodeAt(i) === MINUS
    if (negative) i++
    let mantissa = 0
    let digits = 0
    let fraction = -1
    for (; ; i++) {
      const c = t.charCodeAt(i)
      if (c >= 48 && c <= 57) {
        mantissa = mantissa * 10 + (c - 48)
        digits++
        if (fraction >= 0) fraction++
      } else if (c === DOT && fraction < 0 && digits > 0) fraction = 0
      else if (c === QUOTE) break
      else return false
    }
    if (digits === 0 || fraction === 0 || digits > MAX_DIGITS) return false
    const n = fraction > 0 ? mantissa / POW10[fraction]! : mantissa
    this.value = negative ? -n : n
    this.pos = i + 1
    return true
  }

  /** A JSON integer of at most 15 digits (a safe integer), no fraction or exponent. */
  private integer(): boolean {
    const t = this.text
    let i = this.pos
    const negative = t.charCodeAt(i) === MINUS
    if (negative) i++
    const start = i
    let n = 0
    for (; i < t.length; i++) {
      const c = t.charCodeAt(i)
      if (c < 48 || c > 57) break
      n = n * 10 + (c - 48)
    }
    const digits = i - start
    // JSON has no leading zeros ("01" is not a number): JSON.parse would refuse the frame.
    if (digits === 0 || digits > MAX_DIGITS || (digits > 1 && t.charCodeAt(start) === 48)) return false
    const c = t.charCodeAt(i)
    if (c === DOT || c === 101 || c === 69) return false
    this.value = negative ? -n : n
    this.pos = i
    return true
  }
}

/** The frame's top and depths when it is a well-formed book frame of the venue's exact shape, else null (see above). */
export function scanBookFrame(text: string): HlBookTop | null {
  if (!text.startsWith(PREFIX)) return null
  return new Scan(text).top()
}
