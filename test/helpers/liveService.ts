/**
 * `svc start` on the live venue in a child process (test/fixtures/live-service.ts): the whole ServiceApp against a
 * local Hyperliquid stand-in, on the scaled clock the test shares, for the tests that SIGKILL it or run several.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { ScaledClock } from '../../common/ScaledClock.ts'
import type { LocalVenue } from '../../ingest/hyperliquid/local/LocalVenue.ts'

const FIXTURE = fileURLToPath(new URL('../fixtures/live-service.ts', import.meta.url))

export interface LiveServiceChild {
  process: ChildProcess
  /** What it printed so far: its status lines (stdout) and its logs and progress lines (stderr). */
  out: string
  err: string
  /** Its API's base URL once it listens, else null. */
  url: () => string | null
  exited: Promise<number | null>
}

/** Spawns one; the test's teardown should SIGKILL what is still running. */
export function spawnLiveService(o: { dataDir: string; venue: LocalVenue; clock: ScaledClock; env: Record<string, string> }): LiveServiceChild {
  const { venue, clock } = o
  const args = JSON.stringify({ dataDir: o.dataDir, baseUrl: venue.baseUrl, wsUrl: venue.wsUrl, anchorMs: clock.anchorMs, wallAnchorMs: clock.wallAnchorMs, speed: clock.speed, env: o.env })
  const p = spawn(process.execPath, ['--import', 'tsx', FIXTURE, args], { env: { ...process.env, NODE_ENV: 'test' } })
  const child: LiveServiceChild = {
    process: p,
    out: '',
    err: '',
    url: () => /^url (\S+)$/m.exec(child.out)?.[1] ?? null,
    exited: new Promise((resolve) => p.on('exit', (code) => resolve(code))),
  }
  p.stdout!.on('data', (d: Buffer) => void (child.out += d.toString()))
  p.stderr!.on('data', (d: Buffer) => void (child.err += d.toString()))
  return child
}
