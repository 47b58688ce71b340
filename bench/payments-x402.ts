/**
 * Paid calls per second on the x402 path — PAYMENT-SIGNATURE → local verify (EIP-712 recovery) → fsync'd nonce claim →
 * facilitator /verify → handler → facilitator /settle → commit → PAYMENT-RESPONSE — against the LocalFacilitator
 * (the reference @x402/evm facilitator over a simulated USDC, same process), beside the free read of the same
 * records in the same run. Payment headers are signed before the clock starts (client cost, not the server's).
 *
 *   node --import tsx bench/payments-x402.ts [calls]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { requirementsFor } from '../serving/payments/x402.ts'
import { priceOf } from '../product/billing/pricing.ts'
import { X402Verifier } from '../serving/payments/x402/X402Verifier.ts'
import { LocalFacilitator } from '../test/helpers/LocalFacilitator.ts'
import { PAY_TO } from '../test/helpers/serving/server.ts'
import { signPayment, startX402Stack, testAccount, TEST_ADDRESS } from '../test/helpers/serving/x402Stack.ts'

export interface X402BenchResult {
  calls: number
  concurrency: number
  paidPerSec: number
  freeReadPerSec: number
  localVerifyPerSec: number
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<number> {
  let next = 0
  const t0 = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await fn(items[next++]!)
  }))
  return performance.now() - t0
}

export async function benchPaymentsX402(opts: { calls?: number; concurrency?: number } = {}): Promise<X402BenchResult> {
  const calls = opts.calls ?? 400
  const concurrency = opts.concurrency ?? 16
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-x402-'))
  const facilitator = await LocalFacilitator.start()
  facilitator.token.fund(TEST_ADDRESS, 10n ** 15n)
  const stack = await startX402Stack({ dataDir, facilitator })
  try {
    const url = `${stack.server.url}/test/answers`
    const accepted = requirementsFor(priceOf('perp.funding', 0), PAY_TO)
    const account = testAccount()
    const headers: string[] = []
    for (let i = 0; i < calls; i++) headers.push((await signPayment({ account, accepted, resourceUrl: url })).header)

    const ids: string[] = []
    const paidMs = await pool(headers, concurrency, async (h) => {
      const res = await fetch(url, { method: 'POST', headers: { 'PAYMENT-SIGNATURE': h } })
      const body = (await res.json()) as { data: { answer_id: string } }
      if (res.status !== 200 || !res.headers.get('payment-response')) throw new Error(`paid call answered ${res.status}`)
      ids.push(body.data.answer_id)
    })
    if (stack.book.recorded.length !== calls) throw new Error('not every paid call was recorded')

    const freeMs = await pool(ids, concurrency, async (id) => {
      const res = await fetch(`${stack.server.url}/test/answers/${id}`)
      if (res.status !== 200) throw new Error(`free read answered ${res.status}`)
      await res.arrayBuffer()
    })

    const verifier = new X402Verifier({ now: Date.now })
    const t0 = performance.now()
    for (const h of headers) if (!(await verifier.verify(h, accepted)).ok) throw new Error('local verify failed')
    const verifyMs = performance.now() - t0

    return {
      calls,
      concurrency,
      paidPerSec: (calls / paidMs) * 1000,
      freeReadPerSec: (calls / freeMs) * 1000,
      localVerifyPerSec: (calls / verifyMs) * 1000,
    }
  } finally {
    await stack.stop()
    await facilitator.close()
    await rm(dataDir, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const r = await benchPaymentsX402({ calls: Number(process.argv[2] ?? 400) })
  process.stdout.write(JSON.stringify(r, null, 2) + '\n')
}
