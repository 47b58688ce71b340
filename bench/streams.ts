/**
 * Live streams beside polling (issue 33): resolutions reaching 10,000 WebSocket subscribers of /v1/streams/feed on one
 * server, beside the same resolutions found by the same number of clients polling GET /v1/feed once a second, in the
 * same run. Each side: the delivery delay (from the moment the engine staged the outcome to the moment a client has the
 * chip; for a poller, the first poll that lists it), its p50 and p99 over every (client, resolution) pair, any pair
 * missing, and the CPU the server process spent (and the clients' process, beside it: both share the two cores).
 *
 * The server is the real one (Server, the route registry, uWS pub/sub) over a real DecisionLedger on an embedded log
 * and the LedgerStreams that follow its journals, as `svc start` wires them; the ledger's other reads are not served
 * (only the feed is asked). The clients run in a child process (this file, role `clients`), so their parsing is not
 * the server's CPU. Times are epoch milliseconds from performance.timeOrigin + now() in both processes.
 *
 *   node --max-semi-space-size=32 --import tsx bench/streams.ts [subscribers] [seconds] [resolutionsPerSec]
 */
import { fork } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { quantile } from 'simple-statistics'
import WebSocket from 'ws'
import { DecisionLedger } from '../engine/DecisionLedger.ts'
import { LedgerStreams } from '../engine/LedgerStreams.ts'
import { LedgerView, openClockOf } from '../engine/LedgerView.ts'
import type { LedgerReads } from '../engine/LedgerReads.ts'
import { QuestionCatalog } from '../engine/QuestionCatalog.ts'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import type { LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import { testDecision, testOutcome } from './ledgerRecords.ts'
import { RateLimiter } from '../serving/RateLimiter.ts'
import { Server } from '../serving/Server.ts'

const epochNow = () => performance.timeOrigin + performance.now()
const FEED_PAGE = 50
/** WebSocket handshakes in flight at once while the subscribers connect. */
const CONNECT_BATCH = 250
/** Connections the pollers share (keep-alive), as a fleet of clients behind a few hosts would. */
const POLL_SOCKETS = 256

export interface StreamsBenchSide {
  name: string
  clients: number
  resolutions: number
  /** (client, resolution) pairs delivered / expected. */
  delivered: number
  expected: number
  p50Ms: number
  p99Ms: number
  /** CPU of the server process over the measured window, in cores (1 = one core busy all the time). */
  serverCores: number
  clientCores: number
}

interface ClientsRequest {
  mode: 'ws' | 'poll'
  url: string
  clients: number
}

type ClientsMessage = { kind: 'ready' } | { kind: 'result'; receipts: Record<string, number[]>; cpuMicros: number; wallMs: number; errors: number }

export async function benchStreams(o: { subscribers?: number; seconds?: number; perSec?: number; print?: (line: string) => void } = {}): Promise<StreamsBenchSide[]> {
  const subscribers = o.subscribers ?? 10_000
  const seconds = o.seconds ?? 30
  const perSec = o.perSec ?? 5
  const print = o.print ?? (() => undefined)
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-streams-'))
  const log = await EmbeddedLog.open(join(dir, 'log'))
  const ledger = await DecisionLedger.open({ log })
  const catalog = new QuestionCatalog()
  const streams = await LedgerStreams.open({ ledger, clockOf: (d) => openClockOf(catalog, d) })
  // The feed's page through the same view the engine serves it from; nothing else of the ledger is asked here.
  const view = new LedgerView(ledger.index, undefined as never, undefined as never, catalog)
  const reads = { feed: (q: { limit: number; cursor?: string | null }) => view.feedPage(q.limit, q.cursor ?? null) } as unknown as LedgerReads
  const server = await Server.start({
    port: 0,
    config: { payTo: null, streamMaxPerIp: subscribers + 100 },
    services: { ledger: reads, streams, rateLimiter: new RateLimiter({ ip: { burst: 1e9, refillPerSec: 1e9 }, payer: { burst: 1e9, refillPerSec: 1e9 } }) },
  })
  const sides: StreamsBenchSide[] = []
  let n = 0
  try {
    for (const mode of ['ws', 'poll'] as const) {
      const count = Math.round(seconds * perSec)
      // The decisions the run resolves, durable before the clients come (a feed chip needs its decision).
      const decisions: LedgerDecision[] = []
      for (let i = 0; i < count; i++) decisions.push(ledger.stageDecision(testDecision(++n)).record)
      await ledger.flush()
      const url = mode === 'ws' ? `ws://127.0.0.1:${server.port}/v1/streams/feed` : `${server.url}/v1/feed?limit=${FEED_PAGE}`
      const child = startClients({ mode, url, clients: subscribers })
      await child.ready
      print(`   ${mode === 'ws' ? `${subscribers.toLocaleString('en-US')} WebSocket subscribers connected` : `${subscribers.toLocaleString('en-US')} pollers started`}`)
      await sleep(1000)
      const staged = new Map<string, number>()
      const cpu0 = process.cpuUsage()
      const t0 = epochNow()
      for (let i = 0; i < count; i++) {
        const due = t0 + (i * 1000) / perSec
        const wait = due - epochNow()
        if (wait > 0) await sleep(wait)
        const d = decisions[i]!
        staged.set(d.decision_id, epochNow())
        ledger.stageOutcome(testOutcome(d))
        await ledger.flush()
      }
      // Long enough for the last resolution to reach every subscriber and every poller's next poll.
      await sleep(3000)
      const cpu = process.cpuUsage(cpu0)
      const wallMs = epochNow() - t0
      const result = await child.finish()
      const delays: number[] = []
      for (const [id, at] of staged) for (const r of result.receipts[id] ?? []) delays.push(r - at)
      delays.sort((a, b) => a - b)
      const side: StreamsBenchSide = {
        name: mode === 'ws' ? 'WebSocket stream' : 'polling /v1/feed at 1 s',
        clients: subscribers,
        resolutions: count,
        delivered: delays.length,
        expected: count * subscribers,
        p50Ms: delays.length ? quantile(delays, 0.5) : Number.NaN,
        p99Ms: delays.length ? quantile(delays, 0.99) : Number.NaN,
        serverCores: (cpu.user + cpu.system) / 1000 / wallMs,
        clientCores: result.cpuMicros / 1000 / result.wallMs,
      }
      sides.push(side)
      print(
        `   ${side.name.padEnd(26)} delivery p50 ${side.p50Ms.toFixed(1)} ms, p99 ${side.p99Ms.toFixed(1)} ms; ${side.delivered.toLocaleString('en-US')} of ${side.expected.toLocaleString('en-US')} (client, resolution) pairs` +
          `${result.errors ? `, ${result.errors} client errors` : ''}; server CPU ${side.serverCores.toFixed(2)} cores, clients ${side.clientCores.toFixed(2)}`,
      )
    }
    const [ws, poll] = sides as [StreamsBenchSide, StreamsBenchSide]
    print(`   stream vs polling: delivery p50 ${(poll.p50Ms / ws.p50Ms).toFixed(1)}x sooner, p99 ${(poll.p99Ms / ws.p99Ms).toFixed(1)}x; server CPU ${(ws.serverCores / poll.serverCores).toFixed(2)} of polling's`)
    return sides
  } finally {
    await server.close()
    await streams.close()
    await ledger.close()
    await log.close()
    await rm(dir, { recursive: true, force: true })
  }
}

function startClients(req: ClientsRequest): { ready: Promise<void>; finish: () => Promise<Extract<ClientsMessage, { kind: 'result' }>> } {
  const child = fork(fileURLToPath(import.meta.url), ['--clients'], { execArgv: ['--max-semi-space-size=32', '--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  let readyResolve!: () => void
  let resultResolve!: (m: Extract<ClientsMessage, { kind: 'result' }>) => void
  const ready = new Promise<void>((r) => (readyResolve = r))
  const result = new Promise<Extract<ClientsMessage, { kind: 'result' }>>((r) => (resultResolve = r))
  const exited = new Promise<never>((_, reject) => child.on('exit', (code) => reject(new Error(`the bench clients exited (${code})`))))
  exited.catch(() => undefined)
  child.on('message', (m: ClientsMessage) => {
    if (m.kind === 'ready') readyResolve()
    else resultResolve(m)
  })
  child.send(req)
  return {
    ready: Promise.race([ready, exited]),
    finish: async () => {
      child.send('finish')
      const r = await Promise.race([result, exited])
      child.kill()
      return r
    },
  }
}

// ------------------------------------------------------------------ the clients' process

async function runClients(req: ClientsRequest): Promise<void> {
  const receipts = new Map<string, number[]>()
  const note = (id: string, at: number) => {
    let list = receipts.get(id)
    if (!list) receipts.set(id, (list = []))
    list.push(at)
  }
  let errors = 0
  const stop: Array<() => void> = []
  if (req.mode === 'ws') {
    for (let i = 0; i < req.clients; i += CONNECT_BATCH) {
      await Promise.all(
        Array.from({ length: Math.min(CONNECT_BATCH, req.clients - i) }, () => new Promise<void>((resolve) => {
          const ws = new WebSocket(req.url, { perMessageDeflate: false })
          ws.on('message', (m) => {
            const at = epochNow()
            const data = (JSON.parse(String(m)) as { data?: { decision_id?: string } }).data
            if (data?.decision_id) note(data.decision_id, at)
          })
          ws.once('open', () => resolve())
          ws.on('error', () => {
            errors++
            resolve()
          })
          stop.push(() => ws.terminate())
        })),
      )
    }
  } else {
    const agent = new Agent({ keepAlive: true, maxSockets: POLL_SOCKETS })
    let running = true
    // Each poller polls once a second at its own phase; it notes the chips newer than the newest it has seen.
    const newest: string[] = new Array(req.clients).fill('')
    const baselined: boolean[] = new Array(req.clients).fill(false)
    const timers: NodeJS.Timeout[] = new Array(req.clients)
    const poll = (i: number) => {
      const req2 = request(req.url, { agent }, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => (body += c))
        res.on('end', () => {
          const at = epochNow()
          try {
            const chips = (JSON.parse(body) as { data: { chips: Array<{ decision_id: string; resolved_at: string }> } }).data.chips
            let top = newest[i]!
            for (const c of chips) {
              const key = `${c.resolved_at}|${c.decision_id}`
              if (key <= newest[i]!) break
              if (baselined[i]) note(c.decision_id, at)
              if (key > top) top = key
            }
            newest[i] = top
            baselined[i] = true
          } catch {
            errors++
          }
        })
      })
      req2.on('error', () => void errors++)
      req2.end()
    }
    for (let i = 0; i < req.clients; i++) {
      const tick = () => {
        if (!running) return
        poll(i)
        timers[i] = setTimeout(tick, 1000)
      }
      timers[i] = setTimeout(tick, (i * 1000) / req.clients)
    }
    stop.push(() => {
      running = false
      for (const t of timers) clearTimeout(t)
      agent.destroy()
    })
    // Every poller has polled once (its baseline: what was in the feed before the run is not a delivery).
    await sleep(1500)
  }
  const cpu0 = process.cpuUsage()
  const t0 = epochNow()
  process.send!({ kind: 'ready' } satisfies ClientsMessage)
  await new Promise<void>((resolve) => process.on('message', (m) => m === 'finish' && resolve()))
  const cpu = process.cpuUsage(cpu0)
  const wallMs = epochNow() - t0
  for (const s of stop) s()
  process.send!({ kind: 'result', receipts: Object.fromEntries(receipts), cpuMicros: cpu.user + cpu.system, wallMs, errors } satisfies ClientsMessage)
}

if (process.argv.includes('--clients')) {
  process.once('message', (req: ClientsRequest) => void runClients(req))
} else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await benchStreams({ subscribers: Number(process.argv[2] ?? 10_000), seconds: Number(process.argv[3] ?? 30), perSec: Number(process.argv[4] ?? 5), print: (line) => process.stdout.write(line + '\n') })
}
