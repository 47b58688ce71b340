/**
 * Paid calls per second on the credits path — x-svc-payer → in-memory reservation → handler → debit rows fsynced on
 * the embedded log (group-committed) → answer receipt fsynced → 200 — beside the free read of the same records in
 * the same run. The paid route is the test work route (test/helpers/serving/workRoutes.ts, n = 1: the cost measured
 * is the payment path, not the work).
 *
 *   node --import tsx bench/payments-credits.ts [calls]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { EmbeddedLog } from '../pipeline/log/EmbeddedLog.ts'
import { BillingService } from '../product/billing/BillingService.ts'
import { RailRouter } from '../serving/payments/RailRouter.ts'
import { RateLimiter } from '../serving/RateLimiter.ts'
import { ROUTES } from '../serving/routes/registry.ts'
import { Server } from '../serving/Server.ts'
import { systemClock } from '../common/Clock.ts'
import { WorkBook, workRoutes } from '../test/helpers/serving/workRoutes.ts'
import { CreditsPaymentGate } from '../serving/payments/CreditsPaymentGate.ts'

const PAY_TO = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'
const PAYER = '0x4444444444444444444444444444444444444444'

export interface CreditsBenchResult {
  calls: number
  concurrency: number
  paidPerSec: number
  freeReadPerSec: number
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<number> {
  let next = 0
  const t0 = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await fn(items[next++]!)
  }))
  return performance.now() - t0
}

export async function benchPaymentsCredits(opts: { calls?: number; concurrency?: number } = {}): Promise<CreditsBenchResult> {
  const calls = opts.calls ?? 2000
  const concurrency = opts.concurrency ?? 16
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-credits-'))
  const log = await EmbeddedLog.open(join(dataDir, 'log'))
  const billing = await BillingService.open({ log, clock: systemClock, opsToken: null })
  const server = await Server.start({
    port: 0,
    config: { payTo: PAY_TO },
    routes: [...ROUTES, ...workRoutes(new WorkBook())],
    services: {
      billing,
      paymentGate: new RailRouter({ payTo: PAY_TO, credits: new CreditsPaymentGate(billing.ledger, PAY_TO) }),
      rateLimiter: new RateLimiter({ ip: { burst: 1e9, refillPerSec: 1e9 }, payer: { burst: 1e9, refillPerSec: 1e9 } }),
    },
  })
  try {
    await billing.grant({ payer: PAYER, credits: calls * 1000, ref: 'bench' })
    const ids: string[] = []
    const paidMs = await pool(Array.from({ length: calls }, (_, i) => i), concurrency, async (i) => {
      const res = await fetch(`${server.url}/v1/test/work`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-svc-payer': PAYER },
        body: JSON.stringify({ question_id: 'S03_trend_continuation', n: 1 + (i % 1000) }),
      })
      const body = (await res.json()) as { data: { id: string } }
      if (res.status !== 200) throw new Error(`paid call answered ${res.status}`)
      ids.push(body.data.id)
    })
    if (billing.ledger.balance(PAYER) !== 0) throw new Error('the balance does not match the calls made')
    const freeMs = await pool(ids, concurrency, async (id) => {
      const res = await fetch(`${server.url}/v1/test/work/${id}`)
      if (res.status !== 200) throw new Error(`free read answered ${res.status}`)
      await res.arrayBuffer()
    })
    return { calls, concurrency, paidPerSec: (calls / paidMs) * 1000, freeReadPerSec: (calls / freeMs) * 1000 }
  } finally {
    await server.close()
    await billing.close()
    await log.close()
    await rm(dataDir, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const r = await benchPaymentsCredits({ calls: Number(process.argv[2] ?? 2000) })
  process.stdout.write(JSON.stringify(r, null, 2) + '\n')
}
