/**
 * Progress for long CLI jobs: a bar on a TTY, plain periodic lines otherwise (CI logs, pipes). Writes to
 * stderr so stdout stays clean for data.
 */
import cliProgress from 'cli-progress'

export interface Progress {
  /** Sets the absolute amount done. */
  update(done: number): void
  setTotal(total: number): void
  stop(): void
}

export function startProgress(label: string, total: number, unit = 'records', stream: NodeJS.WriteStream = process.stderr): Progress {
  if (stream.isTTY && process.env.CI !== 'true') {
    const bar = new cliProgress.SingleBar(
      { format: `${label} [{bar}] {percentage}% | {value}/{total} ${unit} | {eta_formatted} left`, stream, hideCursor: true },
      cliProgress.Presets.shades_classic,
    )
    bar.start(Math.max(total, 1), 0)
    return {
      update: (done) => bar.update(done),
      setTotal: (t) => bar.setTotal(Math.max(t, 1)),
      stop: () => bar.stop(),
    }
  }
  let done = 0
  let lastPrint = Date.now()
  const everyMs = Number(process.env.SVC_PROGRESS_MS ?? 5000)
  const print = () => {
    const pct = total > 0 ? ` (${((100 * done) / total).toFixed(1)}%)` : ''
    stream.write(`${label}: ${done}${total > 0 ? '/' + total : ''} ${unit}${pct}\n`)
  }
  return {
    update(n) {
      done = n
      const now = Date.now()
      if (now - lastPrint >= everyMs) {
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
