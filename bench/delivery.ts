/**
 * Delivery throughput (issue 17): resolutions fanned out to 1,000 registered outcome hook endpoints (100 payers × the
 * cap of 10) on a local receiver, each delivery signed, sent through the URL guard and the pinned client and recorded
 * as a durable attempt row; beside the baseline of the same number of signed POSTs from the same client at the same
 * concurrency with no guard, journal or bus. Printed: deliveries per second, the ratio to the baseline, and the p50 /
 * p99 from a resolution's publication to its arrival at the receiver.
 *
 *   node --import tsx bench/delivery.ts [resolutions]
 */
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { systemClock } from '../common/Clock.ts'
import { Channel, type ResolutionEvent } from '../engine/LedgerBus.ts'
import { UnitOfWork } from '../pipeline/journal/UnitOfWork.ts'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import type { LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import { deliveryId } from '../pipeline/records/deliveryRecord.ts'
import type { LedgerOutcome } from '../pipeline/records/outcomeRecord.ts'
import { DeliveryService } from '../product/delivery/DeliveryService.ts'
import { HookSigner } from '../product/delivery/HookSigner.ts'
import { PinnedHttpClient } from '../product/delivery/PinnedHttpClient.ts'
import { UrlGuard } from '../product/delivery/UrlGuard.ts'

const PAYERS = 100
const PER_PAYER = 10
const CONCURRENCY = 64

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

export async function benchDelivery(opts: { resolutions: number; print: (line: string) => void }): Promise<{ perSec: number; baselinePerSec: number; p50Ms: number; p99Ms: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-delivery-'))
  const arrivals = new Map<string, number>()
  let expected = 0
  let done: () => void = () => {}
  const server = createServer((req, res) => {
    const id = String(req.headers['x-svc-delivery-id'] ?? '')
    req.resume()
    req.on('end', () => {
      if (id && !arrivals.has(id)) arrivals.set(id, performance.now())
      res.writeHead(200).end()
      if (arrivals.size >= expected) done()
    })
  })
  server.keepAliveTimeout = 5000
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const guard = UrlGuard.create({ allow: ['127.0.0.1/32'] })
  const http = PinnedHttpClient.create({ timeoutMs: 5000 })
  try {
    // Baseline: the same number of signed POSTs, same client, same concurrency; no guard, journal or bus.
    const n = opts.resolutions * PER_PAYER
    const target = await guard.check(`${base}/baseline`, 'hook')
    const secret = 'whsec_' + Buffer.alloc(32, 7).toString('base64')
    let next = 0
    expected = n
    const t0 = performance.now()
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        const i = next++
        const body = JSON.stringify({ status: 'resolved', decision_id: randomUUID(), outcome: 'obtains', resolved_at: new Date().toISOString(), statistic: 1 })
        await http.post(target, body, { 'content-type': 'application/json', ...HookSigner.sign(secret, `dlv_${String(i).padStart(32, '0')}`, Math.floor(Date.now() / 1000), body) })
      }
    }))
    const baselinePerSec = n / ((performance.now() - t0) / 1000)
    arrivals.clear()

    // The service: 1,000 endpoints, then resolutions of decisions each payer paid for.
    const decisions = new Map<string, LedgerDecision>()
    const events: ResolutionEvent[] = []
    const resolutions = new Channel<ResolutionEvent>('resolution', () => events, (e) => e.outcome.decision_id)
    const decisionsChannel = new Channel<LedgerDecision>('decision', () => [], (d) => d.decision_id)
    const log = await EmbeddedLog.open(join(dir, 'log'))
    const delivery = await DeliveryService.open({
      log, clock: systemClock, guard, http, push: null, concurrency: CONCURRENCY,
      signer: await HookSigner.open({ dir: join(dir, 'delivery') }),
      ledger: { decision: (id) => decisions.get(id) ?? null, clockNow: () => Date.now() - 1000, resolutions, decisions: decisionsChannel },
    })
    const payers = Array.from({ length: PAYERS }, (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}`)
    const t1 = performance.now()
    for (const payer of payers) {
      const unit = new UnitOfWork()
      for (let k = 0; k < PER_PAYER; k++) {
        const id = delivery.newEndpointId()
        await delivery.registerEndpoint(payer, `${base}/${payer}/${k}`, id, { kind: 'paid', payment_id: id, rail: 'credits', payer }, unit)
      }
      await unit.commit()
    }
    opts.print(`registered ${PAYERS * PER_PAYER} endpoints in ${((performance.now() - t1) / 1000).toFixed(1)} s`)
    const published = new Map<string, number>()
    const asks = new UnitOfWork()
    const batch: ResolutionEvent[] = []
    for (let i = 0; i < opts.resolutions; i++) {
      const payer = payers[i % PAYERS]!
      const decision_id = randomUUID()
      const d = { decision_id, question_id: 'S05_volatility_expansion', asset: 'BTC', subject: null, probability: 0.4 } as unknown as LedgerDecision
      decisions.set(decision_id, d)
      delivery.recordAskIn(asks, { kind: 'paid', payment_id: `cr_${i}`, rail: 'credits', payer }, decision_id)
      const outcome = { decision_id, outcome: 'obtains', resolved_at: new Date().toISOString(), statistic: 1 } as unknown as LedgerOutcome
      batch.push({ decision: d, outcome })
    }
    await asks.commit()
    expected = opts.resolutions * PER_PAYER
    const all = new Promise<void>((r) => (done = r))
    const t2 = performance.now()
    for (const e of batch) {
      published.set(e.outcome.decision_id, performance.now())
      events.push(e)
      resolutions.publish(e)
    }
    await all
    const elapsed = (performance.now() - t2) / 1000
    await delivery.idle()
    const perSec = expected / elapsed
    // Latency per delivery: its decision's publication to the receiver's arrival.
    // Each delivery id is (endpoint, decision): every endpoint of the decision's payer got it.
    const latencies: number[] = []
    for (const e of batch) {
      const t = published.get(e.outcome.decision_id)!
      const payer = delivery.book.asks.get(e.outcome.decision_id)!
      for (const ep of delivery.book.endpointsByPayer.get(payer) ?? []) {
        const id = deliveryIdOf(ep.endpoint_id, e.outcome.decision_id)
        const at = arrivals.get(id)
        if (at !== undefined) latencies.push(at - t)
      }
    }
    latencies.sort((a, b) => a - b)
    const p50Ms = quantile(latencies, 0.5)
    const p99Ms = quantile(latencies, 0.99)
    opts.print(
      `deliveries ${expected} (${opts.resolutions} resolutions × ${PER_PAYER} endpoints of the payer; ${PAYERS * PER_PAYER} registered): ${perSec.toFixed(0)}/s` +
        ` | baseline signed POSTs ${baselinePerSec.toFixed(0)}/s | ratio ${(perSec / baselinePerSec).toFixed(2)}` +
        ` | resolution→delivery p50 ${p50Ms.toFixed(0)} ms, p99 ${p99Ms.toFixed(0)} ms (all ${opts.resolutions} resolutions published at once)`,
    )
    await delivery.close()
    await log.close()
    return { perSec, baselinePerSec, p50Ms, p99Ms }
  } finally {
    server.closeAllConnections()
    server.close()
    await rm(dir, { recursive: true, force: true })
  }
}

const deliveryIdOf = (endpointId: string, decisionId: string) => deliveryId('endpoint', endpointId, decisionId)

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await benchDelivery({ resolutions: Number(process.argv[2] ?? 500), print: (l) => console.log(l) })
}
