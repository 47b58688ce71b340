/**
 * Paid decisions per second through the real POST /v1/decisions — the credits rail (x-svc-payer → reservation →
 * model evaluation → debit, decision and answer receipt appended as one durable unit → 200) — beside free decision
 * reads (GET /v1/decisions/{id}) of the same records at the same concurrency, in the same run, by the same client.
 * Also the p50/p99 of a paid decision, and the same paid route on the x402 rail (the reference client signing each
 * payment against the LocalFacilitator over a simulated USDC, in this process).
 *
 * The engine is the one `svc start` runs, over the recorded OKX SOL tape (bench/engineFixture.ts); its clock moves one
 * millisecond per read, so every ask is a new decision (identical inputs would re-serve a recorded one, free).
 * Issue 11's goal: paid decisions ≥ 0.5 × the free read rate; the issue's reference run measured 721 paid/s against
 * 6,213 free reads/s at concurrency 16 (0.12).
 *
 * Beside them, the FLOOR of a paid call in this harness: a POST through the same client, dispatcher and validation
 * whose handler only appends one record of a decision's size (2.4 KB) as a unit of work on the same embedded log and
 * answers it — no model, no id or hash, no payment, no billing rows. Every paid call does at least that (a paid answer
 * is recorded durably before it is sent), so the paid rate cannot pass the floor's.
 *
 * And the BARE POST: the same ask POSTed through the same client, dispatcher and validation to a handler that answers
 * it at once (no write). It is what this harness charges any POST before a route does work: the in-process fetch client
 * sends a body and shares the cores with the server, so a POST costs the pair more than a GET does.
 *
 * And the PROOF (issue 29): the same paid credits calls, each with its payer's bearer session (Authorization: Bearer),
 * beside the same calls to a second server on the same engine and billing whose proof step is off
 * (PayerProof.trustingNamedPayer, constructible only in code): the ratio is what proving the payer costs (goal ≥ 0.9).
 *
 * Each concurrency runs BENCH_ROUNDS (5) adjacent rounds of the four phases and reports each figure's median.
 *
 *   node --import tsx bench/payments.ts [calls] [concurrency...]     (BENCH_X402_CALLS=0 skips the x402 rail)
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { registerExactEvmScheme } from '@x402/evm/exact/client'
import { privateKeyToAccount } from 'viem/accounts'
import { systemClock } from '../common/Clock.ts'
import { EngineServices } from '../engine/EngineServices.ts'
import { BillingService } from '../product/billing/BillingService.ts'
import { CreditsPaymentGate } from '../serving/payments/CreditsPaymentGate.ts'
import { RailRouter } from '../serving/payments/RailRouter.ts'
import { FacilitatorClient } from '../serving/payments/x402/FacilitatorClient.ts'
import { X402PaymentGate } from '../serving/payments/x402/X402PaymentGate.ts'
import { RateLimiter } from '../serving/RateLimiter.ts'
import { PayerProof } from '../product/identity/PayerProof.ts'
import { Server } from '../serving/Server.ts'
import { openAnswerKeyring } from '../record/answerKeys/answerKeyFile.ts'
import { LocalFacilitator } from '../peers/LocalFacilitator.ts'
import { randomUUID } from 'node:crypto'
import { median } from 'simple-statistics'
import { Type } from '../common/schema.ts'
import { Journal } from '../pipeline/journal/Journal.ts'
import { JournalDef } from '../pipeline/journal/JournalDef.ts'
import { UnitOfWork } from '../pipeline/journal/UnitOfWork.ts'
import { ANY_OBJECT } from '../serving/routes/define.ts'
import { ROUTES } from '../serving/routes/registry.ts'
import type { RouteDef } from '../serving/routes/types.ts'
import { startEngine } from './engineFixture.ts'

const PAY_TO = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'
/** The public Hardhat/Anvil account #0 (x402-v2.md §12.2): a TEST key, funded only on the simulated USDC. */
const TEST_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80' as const
/**
 * S01 (entry-priced, 1,000 credits): the sale gate sells it on this fixture's training window (it blocks S05 there), so
 * every paid call is a real claim through the softmax model, not a refusal.
 */
const ASK = JSON.stringify({ asset: 'SOL', question_id: 'S01_market_regime' })
/** The baseline routes' request body: the ask's two fields, validated by the same dispatcher as every route's. */
const ASK_BODY = Type.Object({ asset: Type.String(), question_id: Type.String() }, { additionalProperties: false })
/** About the encoded size of one decision record on the ledger. */
const FLOOR_RECORD_BYTES = 2400

const FLOOR_JOURNAL = new JournalDef({
  name: 'bench.floor',
  schema: Type.Object({ id: Type.String(), asset: Type.String(), question_id: Type.String(), payload: Type.String() }, { additionalProperties: false }),
  key: (r) => r.id,
  id: (r) => r.id,
  time: () => 0,
  table: { rows: 'bench_floor_rows', dir: 'bench.floor' },
})

/** The floor route: validate the ask, append one decision-sized record durably, answer it (free: no payment). */
function floorRoute(journal: Journal<typeof FLOOR_JOURNAL.schema>): RouteDef {
  return {
    id: 'bench.floor', method: 'POST', path: '/v1/bench/floor', summary: 'the floor of a paid decision', tags: ['bench'], pay: { kind: 'free' },
    request: { body: ASK_BODY },
    response: { kind: 'envelope', schema: ANY_OBJECT },
    errors: [],
    handler: async (ctx) => {
      const record = { id: randomUUID(), asset: String(ctx.body.asset), question_id: String(ctx.body.question_id), payload: 'x'.repeat(FLOOR_RECORD_BYTES) }
      const unit = new UnitOfWork()
      unit.add(journal, [record])
      await unit.commit()
      return { data: record }
    },
  }
}

/** The bare POST: validate the ask and answer it, nothing written (what a POST costs this harness before any work). */
function barePostRoute(): RouteDef {
  return {
    id: 'bench.bare', method: 'POST', path: '/v1/bench/bare', summary: 'a POST that does no work', tags: ['bench'], pay: { kind: 'free' },
    request: { body: ASK_BODY },
    response: { kind: 'envelope', schema: ANY_OBJECT },
    errors: [],
    handler: async (ctx) => ({ data: { asset: String(ctx.body.asset), question_id: String(ctx.body.question_id) } }),
  }
}

/** One concurrency's figures: each rate and ratio the median over adjacent rounds; p50/p99 over every paid call. */
export interface PaidRun {
  concurrency: number
  calls: number
  rounds: number
  paidPerSec: number
  paidP50Ms: number
  paidP99Ms: number
  freeReadPerSec: number
  freeP99Ms: number
  /** paid / free. */
  ratio: number
  /** The lowest and highest round's paid / free. */
  ratioRange: [number, number]
  /** The floor's rate (a durable decision-sized append, no model, no payment) and its ratio to the free reads. */
  floorPerSec: number
  floorRatio: number
  /** The bare POST's rate (validated and answered, nothing written) and its ratio to the free reads. */
  barePostPerSec: number
  barePostRatio: number
  /** The same paid calls without the proof step (a server whose named payer is taken at its word). */
  unprovenPerSec: number
  /** Proven (session) / unproven paid decisions per second, median over rounds: issue 29's goal ≥ 0.9. */
  proofRatio: number
}

export interface PaymentsBenchResult {
  credits: PaidRun[]
  x402: { calls: number; concurrency: number; paidPerSec: number; paidP99Ms: number } | null
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

/** Runs `fn` over items with `concurrency` callers; returns the wall time and each call's latency. */
async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<{ ms: number; latencies: number[] }> {
  let next = 0
  const latencies: number[] = []
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const item = items[next++]!
        const s = performance.now()
        await fn(item)
        latencies.push(performance.now() - s)
      }
    }),
  )
  return { ms: performance.now() - t0, latencies: latencies.sort((a, b) => a - b) }
}

export async function benchPayments(opts: { calls?: number; rounds?: number; concurrencies?: number[]; x402Calls?: number; print?: (line: string) => void } = {}): Promise<PaymentsBenchResult> {
  const calls = opts.calls ?? 3000
  const rounds = opts.rounds ?? 5
  const concurrencies = opts.concurrencies ?? [16, 64]
  const print = opts.print ?? (() => undefined)
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-payments-'))
  let base: number | null = null
  let tick = 0
  // A new event-time instant at every read: every ask is a new decision.
  const started = await startEngine(dir, { clock: { now: () => (base ?? 0) + ++tick } })
  base = started.lastTick
  const { runner, log } = started
  const billing = await BillingService.open({ log, clock: systemClock, opsToken: null })
  const facilitator = await LocalFacilitator.start()
  const account = privateKeyToAccount(TEST_KEY)
  facilitator.token.fund(account.address, 10n ** 15n)
  const x402 = await X402PaymentGate.open({
    payTo: PAY_TO,
    dataDir: join(dir, 'x402'),
    facilitator: new FacilitatorClient({ url: facilitator.url }),
  })
  const engine = new EngineServices(runner)
  const floorJournal = await Journal.open({ log, def: FLOOR_JOURNAL })
  const signing = process.env.PAYMENTS_BENCH_SIGNING ?? 'worker'
  const answerKeys = signing === 'off' ? null : await openAnswerKeyring({ dataDir: dir, now: Date.now, worker: signing === 'worker' })
  const server = await Server.start({
    port: 0,
    routes: [...ROUTES, floorRoute(floorJournal), barePostRoute()],
    config: { payTo: PAY_TO },
    services: {
      ledger: engine,
      engine,
      billing,
      // Every decision record served is signed, as `svc start` wires it (issue 29).
      // PAYMENTS_BENCH_SIGNING=thread signs on the serving thread, =off not at all: what signing costs a paid call.
      ...(answerKeys ? { answerKeys } : {}),
      paymentGate: new RailRouter({ payTo: PAY_TO, credits: new CreditsPaymentGate(billing.ledger, PAY_TO), x402 }),
      // The bench measures payments, not the token bucket refusing them.
      rateLimiter: new RateLimiter({ ip: { burst: 1e9, refillPerSec: 1e9 }, payer: { burst: 1e9, refillPerSec: 1e9 } }),
    },
  })
  // The baseline of the proof: the same wiring with the proof step switched off (never reachable by configuration).
  const unproven = await Server.start({
    port: 0,
    routes: ROUTES,
    config: { payTo: PAY_TO },
    services: {
      ledger: engine,
      engine,
      billing,
      paymentGate: new RailRouter({ payTo: PAY_TO, credits: new CreditsPaymentGate(billing.ledger, PAY_TO) }),
      rateLimiter: new RateLimiter({ ip: { burst: 1e9, refillPerSec: 1e9 }, payer: { burst: 1e9, refillPerSec: 1e9 } }),
      payerProof: (origin) => PayerProof.trustingNamedPayer(origin),
    },
  })
  try {
    const url = `${server.url}/v1/decisions`
    const payers = Array.from({ length: 64 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}`)
    // Each payer's session, opened as POST /v1/auth/session opens it after a verified sign-in (the bench measures the
    // per-call proof, a bearer check, not the one-time signature).
    const sessions = new Map<string, string>()
    for (const p of payers) sessions.set(p, `Bearer ${(await server.services.payerProof.sessions.open(p, 86_400_000, Date.now())).token}`)
    // Every paid phase runs twice (with the proof and without it), plus the two warm-ups.
    const total = 2 * (calls + Math.max(...concurrencies) * rounds) * (concurrencies.length + 1) + 400
    for (const p of payers) await billing.grant({ payer: p, credits: Math.ceil(total / payers.length + 10) * 1000, ref: 'bench' })
    const paid = async (i: number, ids: string[]) => {
      const payer = payers[i % payers.length]!
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-svc-payer': payer, authorization: sessions.get(payer)! }, body: ASK })
      const body = (await res.json()) as { data: { decision_id: string }; meta: { pricing: { credits: number } | null } }
      if (res.status !== 200) throw new Error(`paid decision answered ${res.status}: ${JSON.stringify(body)}`)
      if (res.headers.get('x-svc-credits-charged') !== '1000') throw new Error('a paid decision was not charged as a new decision (inputs repeated?)')
      if ((body.data as { action?: string }).action === 'refuse') throw new Error(`the paid decision is a refusal: ${JSON.stringify(body.data)}`)
      ids.push(body.data.decision_id)
    }
    /** The same paid call to the server without the proof step: x-svc-payer alone. */
    const paidUnproven = async (i: number) => {
      const res = await fetch(`${unproven.url}/v1/decisions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-svc-payer': payers[i % payers.length]! }, body: ASK })
      if (res.status !== 200 || res.headers.get('x-svc-credits-charged') !== '1000') throw new Error(`unproven paid decision answered ${res.status}: ${await res.text()}`)
      await res.arrayBuffer()
    }
    /** A POST of the ask to a baseline route (the floor, the bare POST), its answer read whole. */
    const postAsk = (path: string, name: string) => async () => {
      const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: ASK })
      if (res.status !== 200) throw new Error(`${name} answered ${res.status}`)
      await res.arrayBuffer()
    }
    const floor = postAsk('/v1/bench/floor', 'floor')
    const barePost = postAsk('/v1/bench/bare', 'bare POST')
    // Warm up (JIT, connections) before measuring.
    await pool(Array.from({ length: 200 }, (_, i) => i), 16, (i) => paid(i, []))
    await pool(Array.from({ length: 200 }, (_, i) => i), 16, paidUnproven)
    await pool(Array.from({ length: 200 }, (_, i) => i), 16, floor)
    await pool(Array.from({ length: 200 }, (_, i) => i), 16, barePost)

    const credits: PaidRun[] = []
    for (const concurrency of concurrencies) {
      // Adjacent rounds of (paid, free read, floor, bare POST), each phase calls/rounds calls, and each figure the median
      // over the rounds: on this shared machine one phase can run a third slower than its neighbour, and a ratio of two
      // back-to-back phases only holds for the pair.
      const perRound = Math.max(concurrency, Math.floor(calls / rounds))
      const rows: Array<{ paid: number; free: number; freeP99: number; floor: number; bare: number; unproven: number; proofRatio: number }> = []
      const paidLatencies: number[] = []
      for (let round = 0; round < rounds; round++) {
        const ids: string[] = []
        const items = Array.from({ length: perRound }, (_, i) => round * perRound + i)
        // The unproven phase runs right before the proven one on even rounds and right after it on odd ones, so
        // neither side of the proof ratio always gets the warmer (or the noisier) slot.
        const u0 = round % 2 === 0 ? await pool(items, concurrency, paidUnproven) : null
        const p = await pool(items, concurrency, (i) => paid(i, ids))
        const u = u0 ?? (await pool(items, concurrency, paidUnproven))
        const f = await pool(ids, concurrency, async (id) => {
          const res = await fetch(`${server.url}/v1/decisions/${id}`)
          if (res.status !== 200) throw new Error(`free read answered ${res.status}`)
          await res.arrayBuffer()
        })
        const fl = await pool(ids, concurrency, floor)
        const bare = await pool(ids, concurrency, barePost)
        const rate = (ms: number) => (perRound / ms) * 1000
        rows.push({ paid: rate(p.ms), free: rate(f.ms), freeP99: quantile(f.latencies, 0.99), floor: rate(fl.ms), bare: rate(bare.ms), unproven: rate(u.ms), proofRatio: u.ms / p.ms })
        for (const l of p.latencies) paidLatencies.push(l)
      }
      paidLatencies.sort((a, b) => a - b)
      const ratios = rows.map((r) => r.paid / r.free)
      const run: PaidRun = {
        concurrency,
        calls: perRound * rounds,
        rounds,
        paidPerSec: median(rows.map((r) => r.paid)),
        paidP50Ms: quantile(paidLatencies, 0.5),
        paidP99Ms: quantile(paidLatencies, 0.99),
        freeReadPerSec: median(rows.map((r) => r.free)),
        freeP99Ms: median(rows.map((r) => r.freeP99)),
        ratio: median(ratios),
        ratioRange: [Math.min(...ratios), Math.max(...ratios)],
        floorPerSec: median(rows.map((r) => r.floor)),
        floorRatio: median(rows.map((r) => r.floor / r.free)),
        barePostPerSec: median(rows.map((r) => r.bare)),
        barePostRatio: median(rows.map((r) => r.bare / r.free)),
        unprovenPerSec: median(rows.map((r) => r.unproven)),
        proofRatio: median(rows.map((r) => r.proofRatio)),
      }
      credits.push(run)
      print(
        `credits, concurrency ${String(concurrency).padStart(2)}: paid ${Math.round(run.paidPerSec)} decisions/s (p50 ${run.paidP50Ms.toFixed(1)} ms, p99 ${run.paidP99Ms.toFixed(1)} ms)` +
          `  vs free reads ${Math.round(run.freeReadPerSec)} req/s (p99 ${run.freeP99Ms.toFixed(1)} ms) → ratio ${run.ratio.toFixed(2)} (median of ${rounds} rounds, ${run.ratioRange[0].toFixed(2)}–${run.ratioRange[1].toFixed(2)})` +
          `; floor (durable 2.4 KB append, no model, no payment) ${Math.round(run.floorPerSec)}/s → ratio ${run.floorRatio.toFixed(2)}` +
          `; bare POST (answered, nothing written) ${Math.round(run.barePostPerSec)}/s → ratio ${run.barePostRatio.toFixed(2)}`,
      )
      print(
        `proof of payer, concurrency ${String(concurrency).padStart(2)}: paid ${Math.round(run.paidPerSec)} decisions/s with a session token vs ${Math.round(run.unprovenPerSec)}/s without the proof step` +
          ` → ratio ${run.proofRatio.toFixed(2)} (median of ${rounds} rounds; goal ≥ 0.9)`,
      )
    }

    let x402Run: PaymentsBenchResult['x402'] = null
    const x402Calls = opts.x402Calls ?? 300
    if (x402Calls > 0) {
      const client = new x402Client()
      registerExactEvmScheme(client, { signer: account })
      const payFetch = wrapFetchWithPayment(fetch, client)
      const concurrency = 16
      const r = await pool(Array.from({ length: x402Calls }, (_, i) => i), concurrency, async () => {
        const res = await payFetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: ASK })
        if (res.status !== 200 || !res.headers.get('payment-response')) throw new Error(`x402 paid decision answered ${res.status}: ${await res.text()}`)
        await res.arrayBuffer()
      })
      x402Run = { calls: x402Calls, concurrency, paidPerSec: (x402Calls / r.ms) * 1000, paidP99Ms: quantile(r.latencies, 0.99) }
      print(
        `x402, concurrency ${concurrency}: paid ${Math.round(x402Run.paidPerSec)} decisions/s (p99 ${x402Run.paidP99Ms.toFixed(1)} ms; each call is a 402 challenge, ` +
          'a signature by the reference client and a paid retry, verified and settled by the local facilitator)',
      )
    }
    return { credits, x402: x402Run }
  } finally {
    await unproven.close()
    await server.close()
    await answerKeys?.close()
    await floorJournal.close()
    await x402.close()
    await facilitator.close()
    await billing.close()
    await runner.close()
    await log.close()
    await rm(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const calls = Number(process.argv[2] ?? 3000)
  const concurrencies = process.argv.slice(3).map(Number)
  const x402Calls = Number(process.env.BENCH_X402_CALLS ?? 300)
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
  await benchPayments({ calls, rounds, x402Calls, ...(concurrencies.length ? { concurrencies } : {}), print: (l) => process.stdout.write(l + '\n') })
}
