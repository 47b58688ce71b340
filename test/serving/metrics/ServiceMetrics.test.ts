/**
 * GET /metrics over real HTTP on 127.0.0.1: a few requests of known outcome (200, 400, 404, a paid credits call, a
 * refused scrape), then a scrape parsed by a strict exposition parser (test/helpers/prometheus.ts): the counters
 * moved by exactly the requests made, the histogram is cumulative and agrees with the counter, the paid call is
 * counted on its rail with its price, process metrics are there, /metrics is in no discovery document, and every
 * answer wrote one access-log line. Then the ledger's decisions and resolutions and the event log's consumer lag,
 * from a real DecisionLedger on a real EmbeddedLog.
 */
import { withProof } from '../../helpers/serving/signIn.ts'
import t from 'tap'
import { join } from 'node:path'
import { pino } from 'pino'
import { Registry } from 'prom-client'
import { DecisionLedger } from '../../../engine/DecisionLedger.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import type { LedgerDecision } from '../../../pipeline/records/decisionRecord.ts'
import type { LedgerOutcome } from '../../../pipeline/records/outcomeRecord.ts'
import { priceOf } from '../../../product/billing/pricing.ts'
import { LATENCY_BUCKETS } from '../../../serving/metrics/RequestMetrics.ts'
import { ServiceMetrics } from '../../../serving/metrics/ServiceMetrics.ts'
import { CreditsPaymentGate } from '../../../serving/payments/CreditsPaymentGate.ts'
import { RailRouter } from '../../../serving/payments/RailRouter.ts'
import { ROUTES } from '../../../serving/routes/registry.ts'
import { parseExposition, valueOf, type Family } from '../../helpers/prometheus.ts'
import { OPS_TOKEN, withBilling } from '../../helpers/serving/billing.ts'
import { PAY_TO, withServer } from '../../helpers/serving/server.ts'
import { WorkBook, workRoutes } from '../../helpers/serving/workRoutes.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const PAYER = '0x1111111111111111111111111111111111111111'

function requestsOf(families: Map<string, Family>): Map<string, number> {
  const out = new Map<string, number>()
  for (const s of families.get('svc_http_requests_total')!.samples) out.set(`${s.labels.route} ${s.labels.status}`, s.value)
  return out
}

t.test('GET /metrics counts exactly the requests made, by route id and status, and each wrote one access-log line', async (t) => {
  const lines: string[] = []
  const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(s) })
  const dir = await makeTempDir(t, 'svc-metrics-')
  const log = await EmbeddedLog.open(join(dir, 'log'))
  t.teardown(() => log.close())
  const billing = await withBilling(t, { log })
  const metrics = new ServiceMetrics(new Registry())
  metrics.watchLag(log)
  const server = await withServer(t, {
    routes: [...ROUTES, ...workRoutes(new WorkBook())],
    services: { billing, metrics, logger, paymentGate: new RailRouter({ payTo: PAY_TO, credits: new CreditsPaymentGate(billing.ledger, PAY_TO) }) },
  })
  const ids: Array<{ id: string; route: string; status: number; method: string }> = []
  const call = async (route: string, method: string, path: string, init: { body?: unknown; headers?: Record<string, string> } = {}) => {
    const res = await fetch(server.url + path, {
      method,
      headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(await withProof(server, path, init.headers ?? {}, init.body)) },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    })
    const text = await res.text()
    ids.push({ id: res.headers.get('x-request-id')!, route, status: res.status, method })
    return { res, text }
  }

  t.equal((await call('healthz', 'GET', '/healthz')).res.status, 200)
  t.equal((await call('feed', 'GET', '/v1/feed?limit=abc')).res.status, 400)
  t.equal((await call('unmatched', 'GET', '/no/such/path')).res.status, 404)
  t.equal((await call('unmatched', 'GET', '/v1/nothing-here-0123456789')).res.status, 404, 'a second unknown path: same label')
  t.equal((await call('billing.grants', 'POST', '/v1/billing/grants', { body: { action: 'grant', payer: PAYER, credits: 5000, ref: 'm1' }, headers: { 'x-svc-ops': OPS_TOKEN } })).res.status, 200)
  const paid = await call('test.work', 'POST', '/v1/test/work', { body: { question_id: 'S03_trend_continuation', n: 4 }, headers: { 'x-svc-payer': PAYER } })
  t.equal(paid.res.status, 200, 'a paid call on the credits rail')
  t.equal(paid.res.headers.get('x-svc-credits-charged'), '1000')
  const refused = await call('ops.metrics', 'GET', '/metrics')
  t.equal(refused.res.status, 403, 'no operator token: refused')
  t.equal(JSON.parse(refused.text).error.code, 'OPS_FORBIDDEN')
  t.equal((await call('ops.metrics', 'GET', '/metrics', { headers: { authorization: 'Bearer wrong' } })).res.status, 403, 'a wrong bearer token: refused')

  const scrape = await call('ops.metrics', 'GET', '/metrics', { headers: { authorization: `Bearer ${OPS_TOKEN}` } })
  t.equal(scrape.res.status, 200)
  t.equal(scrape.res.headers.get('content-type'), Registry.PROMETHEUS_CONTENT_TYPE, "prom-client's register.contentType")
  t.equal(scrape.res.headers.get('content-type'), metrics.contentType)
  const families = parseExposition(scrape.text)

  // The scrape is counted after it was rendered, so this one sees the nine requests before it.
  t.same(
    Object.fromEntries(requestsOf(families)),
    { 'healthz 200': 1, 'feed 400': 1, 'unmatched 404': 2, 'billing.grants 200': 1, 'test.work 200': 1, 'ops.metrics 403': 2 },
    'one series per route id and status, moved by exactly the requests made; unknown paths under one label',
  )
  t.notOk(scrape.text.includes('/no/such/path'), 'a raw path never becomes a label')

  const hist = families.get('svc_http_request_duration_seconds')!
  t.equal(hist.type, 'histogram')
  for (const [key, count] of requestsOf(families)) {
    const [route, status] = key.split(' ') as [string, string]
    const buckets = hist.samples.filter((s) => s.name.endsWith('_bucket') && s.labels.route === route && s.labels.status === status)
    t.same(buckets.map((b) => b.labels.le), [...LATENCY_BUCKETS.map(String), '+Inf'], `${key}: every bound, ascending, then +Inf`)
    t.ok(buckets.every((b, i) => i === 0 || b.value >= buckets[i - 1]!.value), `${key}: buckets are cumulative`)
    t.equal(buckets.at(-1)!.value, count, `${key}: +Inf bucket = the request count`)
    t.equal(valueOf(families, 'svc_http_request_duration_seconds', 'svc_http_request_duration_seconds_count', { route, status }), count)
    const sum = valueOf(families, 'svc_http_request_duration_seconds', 'svc_http_request_duration_seconds_sum', { route, status })!
    t.ok(sum > 0 && sum < 30 * count, `${key}: a latency sum in seconds (${sum})`)
  }

  const price = priceOf('decision.deep')
  t.equal(valueOf(families, 'svc_paid_calls_total', 'svc_paid_calls_total', { rail: 'credits' }), 1, 'one paid call on the credits rail')
  t.equal(valueOf(families, 'svc_paid_credits_total', 'svc_paid_credits_total', { rail: 'credits' }), price.credits)
  t.equal(valueOf(families, 'svc_paid_usd_total', 'svc_paid_usd_total', { rail: 'credits' }), Number(price.usd))
  for (const rail of ['x402', 'fee']) t.equal(valueOf(families, 'svc_paid_calls_total', 'svc_paid_calls_total', { rail }), 0, `${rail}: exposed at 0`)

  for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
    t.ok((families.get(name)?.samples.length ?? 0) > 0, `process metric ${name}`)
  }
  t.equal(families.get('svc_consumer_lag')?.type, 'gauge')
  // The credits ledger follows billing.draws for as long as it runs (issue 32: another instance's debits reach its
  // balances), so that topic's one reader is its follower, group svc.credits; no other consumer of it is left running
  // (a leaked throwaway reader once was, fixed in EmbeddedConsumer). Live followers' lag is the next test's business.
  const draws = families.get('svc_consumer_lag')!.samples.filter((s) => s.labels.topic === 'billing.draws')
  t.ok(draws.length > 0, 'the credits ledger\'s follower of billing.draws reports its lag')
  t.same([...new Set(draws.map((s) => s.labels.group))], ['svc.credits'], 'and no other reader of billing.draws is left running')

  // A second scrape, with x-svc-ops, sees the first one.
  const again = parseExposition((await call('ops.metrics', 'GET', '/metrics', { headers: { 'x-svc-ops': OPS_TOKEN } })).text)
  t.equal(valueOf(again, 'svc_http_requests_total', 'svc_http_requests_total', { route: 'ops.metrics', status: '200' }), 1)

  for (const doc of ['/openapi.json', '/llms.txt', '/.well-known/ai.txt', '/.well-known/agent.json']) {
    const res = await fetch(server.url + doc)
    const text = await res.text()
    if (res.status !== 200) continue // a document not served by this deployment cannot list it either
    t.notOk(/\/metrics\b/.test(text), `${doc} does not mention /metrics`)
  }
  const openapi = (await (await fetch(server.url + '/openapi.json')).json()) as { paths: Record<string, unknown> }
  t.notOk('/metrics' in openapi.paths, 'not an OpenAPI path')

  // The access log: one line per answered request, with its id, route, method, status, latency and rail when paid.
  const access = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request')
  t.equal(access.length, ids.length + 5, 'one line per request (the five document reads included)')
  for (const r of ids) {
    const line = access.filter((l) => l.request_id === r.id)
    t.equal(line.length, 1, `one line for ${r.method} ${r.route} ${r.status}`)
    t.match(line[0], { route: r.route, method: r.method, status: r.status, ms: Number })
    t.ok((line[0]!.ms as number) >= 0)
    t.equal(line[0]!.rail, r.route === 'test.work' ? 'credits' : undefined, 'the rail only on the paid call')
  }
})

function decision(n: number, question_id = 'S05_volatility_expansion'): LedgerDecision {
  const hex = n.toString(16).padStart(12, '0')
  return {
    v: 1, decision_id: `0198a3c4-5e6f-8a0b-9c1d-${hex}`, question_id, asset: 'BTC', subject: null, event: `event ${n}`, horizon: '240m',
    horizon_end: new Date(Date.UTC(2026, 6, 1, 4) + n * 60_000).toISOString(), created_at: new Date(Date.UTC(2026, 6, 1) + n * 60_000).toISOString(),
    conditions: { n }, probability: 0.2, confidence: 0.5, decision: 'vol_expansion:unlikely', action: 'monitor', input_hash: 'a'.repeat(64),
    state_hash: 'b'.repeat(64), policy_version: 'policy-2.0.0', jev_version: 'jev-1.0.0', choice: null, payment_id: null, payment_rail: 'none',
    matched_rules: [], refusal_reason: null, model_id: question_id, fitted_version: null, policy_checksum: 'c'.repeat(64), journal: null,
  } as LedgerDecision
}

function outcome(d: LedgerDecision, result: LedgerOutcome['outcome']): LedgerOutcome {
  return {
    v: 1, decision_id: d.decision_id, question_id: d.question_id, asset: d.asset, subject: null, outcome: result,
    resolved_at: d.horizon_end, horizon_end: d.horizon_end, statistic: 0.01, statistic_detail: null, realized_choice: null, reason: null,
  }
}

t.test('decisions and resolutions count what enters the ledger after start; lag reads the ledger followers', async (t) => {
  const dir = await makeTempDir(t, 'svc-metrics-ledger-')
  const log = await EmbeddedLog.open(join(dir, 'log'))
  t.teardown(() => log.close())
  const ledger = await DecisionLedger.open({ log })
  t.teardown(() => ledger.close())
  const history = decision(1)
  ledger.stageDecision(history)
  ledger.stageOutcome(outcome(history, 'obtains'))
  await ledger.flush()

  const metrics = new ServiceMetrics(new Registry())
  t.teardown(() => metrics.close())
  metrics.watchLedger(ledger.bus)
  metrics.watchLag(log)
  const [a, b, c] = [decision(2), decision(3), decision(4, 'S03_trend_continuation')]
  for (const d of [a, b, c]) ledger.stageDecision(d)
  ledger.stageOutcome(outcome(a, 'not'))
  ledger.stageOutcome(outcome(b, 'not'))
  await ledger.flush()

  const families = parseExposition(await metrics.render())
  t.equal(valueOf(families, 'svc_decisions_recorded_total', 'svc_decisions_recorded_total', { question: 'S05_volatility_expansion' }), 2, 'history before start is not counted')
  t.equal(valueOf(families, 'svc_decisions_recorded_total', 'svc_decisions_recorded_total', { question: 'S03_trend_continuation' }), 1)
  t.equal(valueOf(families, 'svc_resolutions_total', 'svc_resolutions_total', { question: 'S05_volatility_expansion', outcome: 'not' }), 2)
  t.equal(valueOf(families, 'svc_resolutions_total', 'svc_resolutions_total', { outcome: 'obtains' }), undefined, 'the resolution in the history is not counted')
  const lag = families.get('svc_consumer_lag')!.samples
  t.same(new Set(lag.map((s) => s.labels.topic)), new Set(['decisions', 'outcomes']), 'one series per followed topic')
  t.ok(lag.every((s) => s.value === 0 && s.labels.group!.startsWith('svc.ledger-index')), 'the followers have caught up with their own writes')
})
