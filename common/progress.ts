/**
 * Progress for long CLI jobs: a bar on a TTY, plain periodic lines otherwise (CI logs, pipes). Writes to stderr so
 * stdout stays clean for data. The command line passes its settings (app/config.ts: SVC_PROGRESS_MS, CI).
 */
import cliProgress from 'cli-progress'

export interface Progress {
  /** Sets the absolute amount done. */
  update(done: number): void
  setTotal(total: number): void
  stop(): void
}

export interface ProgressOptions {
  /** Plain lines at most this often (ms). */
  everyMs: number
  /** Never draw a bar (CI logs keep every line). */
  plain: boolean
  stream?: NodeJS.WriteStream
}

export const DEFAULT_PROGRESS: ProgressOptions = { everyMs: 5000, plain: false }

/**
 * The bars drawn on each terminal, newest last. Two bars on one line overwrite each other (issue 33 item 7: the
 * service's warm-up and its bootstrap release run at once), so only the newest draws: a new bar freezes the one below
 * it where it stands, and that one draws again, on a fresh line, when the newer one stops.
 */
const drawn = new Map<NodeJS.WriteStream, TtyBar[]>()

interface TtyBar {
  freeze(): void
  thaw(): void
}

export function startProgress(label: string, total: number, unit = 'records', o: ProgressOptions = DEFAULT_PROGRESS): Progress {
  const stream = o.stream ?? process.stderr
  if (stream.isTTY && !o.plain) {
    // An unknown total (0) shows a count and the time taken, not a bar against a made-up total of 1 ("10000/1").
    const known = { total: total > 0 }
    const withTotal = `${label} [{bar}] {percentage}% | {value}/{total} ${unit} | {eta_formatted} left`
    const state = { total: Math.max(total, 1), value: 0 }
    const make = () =>
      new cliProgress.SingleBar(
        {
          format: (options, params, payload) =>
            known.total
              ? cliProgress.Format.Formatter({ ...options, format: withTotal }, params, payload)
              : `${label} ${params.value} ${unit} | ${Math.round((Date.now() - params.startTime) / 1000)} s`,
          stream,
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    let bar: cliProgress.SingleBar | null = null
    const self: TtyBar = {
      freeze: () => {
        bar?.stop()
        bar = null
      },
      thaw: () => {
        bar = make()
        bar.start(state.total, state.value)
      },
    }
    const stack = drawn.get(stream) ?? []
    drawn.set(stream, stack)
    stack.at(-1)?.freeze()
    stack.push(self)
    self.thaw()
    return {
      update: (done) => {
        state.value = done
        bar?.update(done)
      },
      setTotal: (t) => {
        known.total = t > 0
        state.total = Math.max(t, 1)
        bar?.setTotal(state.total)
      },
      stop: () => {
        const at = stack.indexOf(self)
        if (at < 0) return
        stack.splice(at, 1)
        if (bar) {
          // It was the one drawing: the bar it froze draws again.
          self.freeze()
          stack.at(-1)?.thaw()
        }
      },
    }
  }
  let done = 0
  let lastPrint = Date.now()
  const print = () => {
    const pct = total > 0 ? ` (${((100 * done) / total).toFixed(1)}%)` : ''
    stream.write(`${label}: ${done}${total > 0 ? '/' + total : ''} ${unit}${pct}\n`)
  }
  return {
    update(n) {
      done = n
      const now = Date.now()
      if (now - lastPrint >= o.everyMs) {
        lastPrint = now
        print()
      }
    },
    setTotal(t) {
      total = t
    },
    stop: print,
  }
}
