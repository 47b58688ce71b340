/**
 * A time-ordered columnar deque of numbers: append at the tail, prune at the head, binary-search by time.
 * Columns are plain number arrays with a head offset that is compacted once it passes half the length, so pushes and
 * prunes are amortised O(1) and a snapshot never copies the series.
 *
 * dump()/fromDump() carry the retained rows in and out of a state snapshot (pipeline/state/): only the rows, never the
 * head offset, so a restored series answers every lookup as the one it was dumped from.
 */
export class TimeSeries<C extends string> {
  readonly columns: readonly C[]
  private times: number[] = []
  private cols: Record<C, number[]>
  private head = 0

  constructor(columns: readonly C[]) {
    this.columns = columns
    this.cols = Object.fromEntries(columns.map((c) => [c, [] as number[]])) as Record<C, number[]>
  }

  get length(): number {
    return this.times.length - this.head
  }

  /** Appends a row; times must not decrease (event-time order). */
  push(time: number, values: Record<C, number>): void {
    const last = this.times.length > this.head ? this.times[this.times.length - 1]! : -Infinity
    if (time < last) throw new RangeError(`TimeSeries.push: time ${time} is earlier than the last row (${last})`)
    this.times.push(time)
    for (const c of this.columns) this.cols[c].push(values[c])
  }

  /** Time of row i (0 = oldest retained). */
  time(i: number): number {
    return this.times[this.head + i]!
  }

  get(column: C, i: number): number {
    return this.cols[column][this.head + i]!
  }

  lastTime(): number | null {
    return this.length > 0 ? this.times[this.times.length - 1]! : null
  }

  last(column: C): number | null {
    return this.length > 0 ? this.cols[column][this.cols[column].length - 1]! : null
  }

  /** Index of the first row with time > t (rows before it are at or before t); `length` when none. */
  upperBound(t: number): number {
    let lo = this.head
    let hi = this.times.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.times[mid]! <= t) lo = mid + 1
      else hi = mid
    }
    return lo - this.head
  }

  /** Drops rows with time < t. */
  prune(t: number): void {
    while (this.head < this.times.length && this.times[this.head]! < t) this.head++
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head)
      for (const c of this.columns) this.cols[c] = this.cols[c].slice(this.head)
      this.head = 0
    }
  }

  /** The retained rows, oldest first: times and each column as plain arrays (copies). */
  dump(): SeriesDump<C> {
    return { times: this.times.slice(this.head), cols: Object.fromEntries(this.columns.map((c) => [c, this.cols[c].slice(this.head)])) as Record<C, number[]> }
  }

  /** A series holding a dump's rows; throws on a dump that does not fit (a missing column, unequal lengths, times out of order). */
  static fromDump<C extends string>(columns: readonly C[], dump: unknown): TimeSeries<C> {
    const d = dump as Partial<SeriesDump<C>> | null
    if (typeof d !== 'object' || d === null || !isNumberArray(d.times) || typeof d.cols !== 'object' || d.cols === null) throw new Error('a series dump needs times and cols')
    const cols = d.cols as Record<string, unknown>
    if (Object.keys(cols).length !== columns.length) throw new Error(`a series dump has columns ${Object.keys(cols).join(',')}, expected ${columns.join(',')}`)
    for (const c of columns) {
      const col = cols[c]
      if (!isNumberArray(col) || col.length !== d.times.length) throw new Error(`series column ${c}: not ${d.times.length} numbers`)
    }
    for (let i = 1; i < d.times.length; i++) if (!(d.times[i]! >= d.times[i - 1]!)) throw new Error('series times out of order')
    const series = new TimeSeries(columns)
    series.times = [...d.times]
    for (const c of columns) series.cols[c] = [...(cols[c] as number[])]
    return series
  }
}

export interface SeriesDump<C extends string> {
  times: number[]
  cols: Record<C, number[]>
}

function isNumberArray(v: unknown): v is number[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'number')
}
