/**
 * MCP tool calls beside the REST read they proxy (issue 15): `tools/call svc_get_decision` on POST /mcp against
 * GET /v1/decisions/{id} for the same decision, same server, same load generator, in adjacent runs (the ratio of each
 * pair is judged, then the median of the pairs: this machine is shared and noisy). Goal: MCP ≥ 0.5 × the REST read.
 *
 * The engine is the one `svc start` runs over the recorded OKX SOL tape (bench/engineFixture.ts). autocannon drives
 * both (it can POST a body; wrk would need a script), in a worker thread.
 *
 *   node --import tsx bench/mcp.ts [durationSec] [pairs]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import { median } from 'simple-statistics'
import { EngineServices } from '../engine/EngineServices.ts'
import { RateLimiter } from '../serving/RateLimiter.ts'
import { Server } from '../serving/Server.ts'
import { openAnswerKeyring } from '../record/answerKeys/answerKeyFile.ts'
import { MCP_PATH } from '../serving/mcp/McpEndpoint.ts'
import { startEngine } from './engineFixture.ts'

export interface McpBenchRow {
  restPerSec: number
  restP99Ms: number
  mcpPerSec: number
  mcpP99Ms: number
  ratio: number
}

async function measure(opts: { url: string; method?: 'GET' | 'POST'; body?: string; headers?: Record<string, string>; durationSec: number; connections: number }) {
  const r = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    ...(opts.body ? { body: opts.body } : {}),
    ...(opts.headers ? { headers: opts.headers } : {}),
    connections: opts.connections,
    duration: opts.durationSec,
    pipelining: 1,
    workers: 1,
  })
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${opts.url}: ${r.non2xx} non-2xx, ${r.errors} errors`)
  return { perSec: r.requests.average, p99Ms: r.latency.p99 }
}

export async function benchMcp(opts: { durationSec?: number; pairs?: number; connections?: number; print?: (line: string) => void } = {}): Promise<McpBenchRow> {
  const durationSec = opts.durationSec ?? 5
  const pairs = opts.pairs ?? 3
  const connections = opts.connections ?? 32
  const print = opts.print ?? (() => undefined)
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-mcp-'))
  const started = await startEngine(dir)
  const engine = new EngineServices(started.runner)
  const server = await Server.start({
    port: 0,
    config: { payTo: null },
    services: {
      ledger: engine,
      engine,
      // Every decision record served is signed, as `svc start` wires it (issue 29).
      answerKeys: await openAnswerKeyring({ dataDir: dir, now: Date.now, worker: true }),
      rateLimiter: new RateLimiter({ ip: { burst: 1e9, refillPerSec: 1e9 }, payer: { burst: 1e9, refillPerSec: 1e9 } }),
    },
  })
  try {
    const decision = (await engine.feed({ limit: 1 })).chips[0]
    if (!decision) throw new Error('the engine recorded no decision over the bench tape')
    const rest = `${server.url}/v1/decisions/${decision.decision_id}`
    const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'svc_get_decision', arguments: { decision_id: decision.decision_id } } })
    const mcp = { url: server.url + MCP_PATH, method: 'POST' as const, body: call, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' } }
    // Both answer the same record: the MCP result carries the REST body as its structured content.
    const probe = (await (await fetch(mcp.url, { method: 'POST', headers: mcp.headers, body: call })).json()) as { result?: { isError?: boolean; structuredContent?: { data?: { decision_id?: string } } } }
    if (probe.result?.isError || probe.result?.structuredContent?.data?.decision_id !== decision.decision_id) throw new Error(`tools/call svc_get_decision answered ${JSON.stringify(probe)}`)
    await measure({ url: rest, durationSec: 1, connections })
    await measure({ ...mcp, durationSec: 1, connections })
    const rows: McpBenchRow[] = []
    for (let i = 0; i < pairs; i++) {
      const r = await measure({ url: rest, durationSec, connections })
      const m = await measure({ ...mcp, durationSec, connections })
      const row = { restPerSec: r.perSec, restP99Ms: r.p99Ms, mcpPerSec: m.perSec, mcpP99Ms: m.p99Ms, ratio: m.perSec / r.perSec }
      rows.push(row)
      print(`  pair ${i + 1}/${pairs}: GET /v1/decisions/{id} ${Math.round(row.restPerSec)} req/s (p99 ${row.restP99Ms} ms)  vs  tools/call svc_get_decision ${Math.round(row.mcpPerSec)} req/s (p99 ${row.mcpP99Ms} ms) → ratio ${row.ratio.toFixed(2)}`)
    }
    const result: McpBenchRow = {
      restPerSec: median(rows.map((r) => r.restPerSec)),
      restP99Ms: median(rows.map((r) => r.restP99Ms)),
      mcpPerSec: median(rows.map((r) => r.mcpPerSec)),
      mcpP99Ms: median(rows.map((r) => r.mcpP99Ms)),
      ratio: median(rows.map((r) => r.ratio)),
    }
    print(`goal: tools/call svc_get_decision ≥ 0.5 × GET /v1/decisions/{id} → ratio ${result.ratio.toFixed(2)} (median of ${pairs} pairs, ${connections} connections, autocannon)`)
    return result
  } finally {
    await server.close()
    await server.services.answerKeys?.close()
    await started.runner.close()
    await started.log.close()
    await rm(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await benchMcp({ durationSec: Number(process.argv[2] ?? 5), pairs: Number(process.argv[3] ?? 3), print: (line) => process.stdout.write(line + '\n') })
}
