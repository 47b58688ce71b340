/**
 * Issue 31, item 4 (Faults, Kafka part): the service on SVC_LOG=kafka survives a broker restart by itself.
 *
 * The test starts its own broker (scripts/kafka-broker.sh, its own state dir), runs the whole service on it (the
 * simulated venue in the present, a short history), then stops the broker for 30 s and starts it again on its data:
 * - during the outage /readyz answers 503 (the event log is a critical provider), and a paid call answers the typed
 *   503 PROVIDER_DOWN with retry_after_ms within 10 s, charging nothing;
 * - within a minute of the broker's return /readyz is 200 again and every consumer's lag drains to 0, with no tick,
 *   decision or outcome missing or doubled, and no restart of the service.
 *
 * The broker is the test's own (test/helpers/broker.ts: skipped with a message without Java or the broker jars, a
 * failure under CI=true), never the shared one of test/run.sh.
 */
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { ServiceApp } from '../../app/ServiceApp.ts'
import { loadConfig } from '../../app/config.ts'
import { KafkaLog } from '../../pipeline/log/KafkaLog.ts'
import { EVENT_LOG_PROVIDER } from '../../product/platform/EventLogHealth.ts'
import { decodeTickValue } from '../../pipeline/TickEnvelope.ts'
import { topicNames } from '../../pipeline/topics.ts'
import { ownBroker, ownBrokerSkip } from '../helpers/broker.ts'
import { readAll } from '../helpers/logs.ts'
import { signIn } from '../helpers/serving/signIn.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const OUTAGE_MS = 30_000
const PAYER_ACCOUNT = privateKeyToAccount(`0x${'31'.repeat(32)}`)
const PAYER = PAYER_ACCOUNT.address
const OPS = 'ops-token-for-the-broker-restart-test'

interface Http {
  status: number
  body: any
  ms: number
}

async function call(url: string, init: RequestInit = {}, timeoutMs = 60_000): Promise<Http> {
  const t0 = performance.now()
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) })
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // /metrics is text
  }
  return { status: res.status, body, ms: performance.now() - t0 }
}

/** Polls until `check` holds; returns how long it took. */
async function until(what: string, withinMs: number, check: () => Promise<boolean>): Promise<number> {
  const t0 = Date.now()
  for (;;) {
    if (await check().catch(() => false)) return Date.now() - t0
    if (Date.now() - t0 > withinMs) throw new Error(`${what}: not within ${withinMs} ms`)
    await sleep(250)
  }
}

/** svc_consumer_lag{group,topic} lines of /metrics. */
function lags(metrics: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const m of metrics.matchAll(/^svc_consumer_lag\{([^}]*)\} (\S+)$/gm)) out.set(m[1]!, Number(m[2]))
  return out
}

const skip = ownBrokerSkip(t)

t.test('a broker restart: 503 during the outage, a typed uncharged PROVIDER_DOWN, every consumer drains after it', { skip, timeout: 600_000 }, async (t) => {
  const dataDir = await makeTempDir(t, 'svc-broker-restart-data-')
  const broker = await ownBroker(t)
  const brokers = broker.brokers
  const prefix = `br${randomBytes(4).toString('hex')}.`
  const config = loadConfig({
    PORT: '0',
    SVC_RECORD_INTERVAL_S: '0',
    SVC_OPS_TOKEN: OPS,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    SVC_DATA_DIR: dataDir,
    SVC_SIM_HISTORY_DAYS: '2',
    SVC_TRAIN_DAYS: '1',
    SVC_LOG: 'kafka',
    KAFKA_BROKERS: brokers,
    KAFKA_TOPIC_PREFIX: prefix,
    // The broker's floor: a member the restart left behind is replaced within seconds, not kafkajs' default 30 s.
    KAFKA_SESSION_TIMEOUT_MS: '6000',
  })
  const app = await ServiceApp.start(config, () => undefined)
  const abort = new AbortController()
  const running = app.run(abort.signal)
  t.teardown(async () => {
    abort.abort()
    await app.server.close()
    await running
    await app.close()
  })
  const url = app.server.url
  await until('/readyz 200 after the start', 240_000, async () => (await call(`${url}/readyz`)).status === 200)

  const granted = await call(`${url}/v1/billing/grants`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-ops': OPS },
    body: JSON.stringify({ action: 'grant', payer: PAYER, credits: 10_000, ref: 'broker-restart-test' }),
  })
  t.equal(granted.status, 200, 'credits granted')
  const proof = await signIn(url, PAYER_ACCOUNT)
  // Each outage call asks an asset not asked before: identical inputs within a venue minute re-serve the recorded
  // answer for free (no write), which would answer 200 without touching the log.
  const ask = (timeoutMs?: number, asset = 'BTC') =>
    call(
      `${url}/v1/decisions`,
      { method: 'POST', headers: { 'content-type': 'application/json', ...proof.headers }, body: JSON.stringify({ asset, question_id: 'S03_trend_continuation' }) },
      timeoutMs,
    )
  const balance = async () => (await call(`${url}/v1/billing/credits?payer=${PAYER}`, { headers: proof.headers })).body.data.balance_credits as number
  const before = await ask()
  t.equal(before.status, 200, 'a paid call before the outage is answered')
  const balanceBefore = await balance()

  // ---- the outage ----
  await broker.stop()
  const stoppedAt = Date.now()
  // At once, before /readyz may have seen it: refused by the readiness gate, or by the unit's deadline once the
  // broker does not take it (KafkaUnitWriter); either way typed and bounded.
  const first = await ask(15_000, 'ETH')
  t.equal(first.status, 503, `a paid call right after the stop answers 503 (${Math.round(first.ms)} ms, ${first.body.error?.detail?.error_class ? 'readiness gate' : 'unit deadline'})`)
  t.ok(first.ms <= 10_000, `within 10 s (${Math.round(first.ms)} ms)`)
  t.match(first.body.error, { code: 'PROVIDER_DOWN', retryable: true, detail: { reason: 'EVENT_LOG_UNREACHABLE' } }, 'typed PROVIDER_DOWN')
  const notReadyAfter = await until('/readyz 503 during the outage', OUTAGE_MS - 5_000, async () => (await call(`${url}/readyz`, {}, 5_000)).status === 503)
  t.pass(`/readyz went 503 ${notReadyAfter} ms after the broker stopped`)
  const ready = await call(`${url}/readyz`)
  const eventLog = (ready.body.error?.detail?.providers ?? []).find((p: { slug: string }) => p.slug === EVENT_LOG_PROVIDER)
  t.match(eventLog, { status: 'down', critical: true }, `the event-log provider says down (${eventLog?.error_class})`)

  const during = await ask(15_000, 'SOL')
  t.equal(during.status, 503, `a paid call in the outage answers 503 (${Math.round(during.ms)} ms)`)
  t.ok(during.ms <= 10_000, `within 10 s (${Math.round(during.ms)} ms)`)
  t.match(during.body.error, { code: 'PROVIDER_DOWN', retryable: true, detail: { reason: 'EVENT_LOG_UNREACHABLE' } }, 'typed PROVIDER_DOWN')
  t.ok(Number.isInteger(during.body.error?.retry_after_ms) && during.body.error.retry_after_ms > 0, `retry_after_ms ${during.body.error?.retry_after_ms}`)
  const stillDown = await call(`${url}/readyz`)
  t.equal(stillDown.status, 503, 'still 503 in the outage')

  await sleep(Math.max(0, OUTAGE_MS - (Date.now() - stoppedAt)))
  await broker.start()
  const restartedAt = Date.now()

  // ---- recovery, without restarting the service ----
  let lastReady: Http | null = null
  const readyAfter = await until('/readyz 200 after the broker returned', 60_000, async () => (lastReady = await call(`${url}/readyz`, {}, 5_000)).status === 200).catch((err: Error) => {
    // Which providers are still down, and why: the one thing to know when this fails.
    const rows = ((lastReady?.body as any)?.error?.detail?.providers ?? []).filter((p: { status: string }) => p.status !== 'ok')
    throw new Error(`${err.message}; not ok: ${JSON.stringify(rows)}`)
  })
  t.pass(`/readyz 200 ${readyAfter} ms after the broker returned`)
  t.equal(await balance(), balanceBefore, 'the refused calls charged nothing')
  const after = await ask()
  t.equal(after.status, 200, 'a paid call after the return is answered')

  let lastLags = new Map<string, number>()
  const drained = await until('every consumer lag at 0', 60_000 - (Date.now() - restartedAt), async () => {
    const metrics = await call(`${url}/metrics`, { headers: { 'x-svc-ops': OPS } })
    lastLags = lags(String(metrics.body))
    return lastLags.size > 0 && [...lastLags.values()].every((lag) => lag === 0)
  }).catch((err: Error) => {
    t.fail(`${err.message}: ${JSON.stringify([...lastLags])}`)
    return -1
  })
  if (drained >= 0) t.pass(`every consumer lag (${lastLags.size} group/topic pairs, ${[...lastLags.keys()].join(' ')}) at 0 ${Date.now() - restartedAt} ms after the return`)
  t.ok([...lastLags.keys()].some((k) => k.includes('svc.parquet-sink')), 'the Parquet sink is among them')

  // The tick feed and the market state move again: a price of a minute after the broker's return is served.
  const fresh = await until('a market price from after the return', 120_000, async () => {
    const market = await call(`${url}/v1/market/BTC`)
    return market.status === 200 && Date.parse(market.body.data.provenance.timestamp) > restartedAt
  }).catch((err: Error) => (t.fail(err.message), -1))
  if (fresh >= 0) t.pass(`the market state serves a tick from after the return (${fresh} ms after the drain)`)

  // ---- nothing missing or doubled ----
  const reader = await KafkaLog.connect({ brokers: brokers.split(','), clientId: 'svc-test-reader', topicPrefix: prefix })
  t.teardown(() => reader.close())
  const names = topicNames()
  const ticks = await readAll(reader, names.ticks)
  const seqs = ticks.map((r) => decodeTickValue(r.value).seq!)
  t.equal(new Set(seqs).size, seqs.length, `no tick twice (${seqs.length} ticks)`)
  t.equal(seqs.reduce((a, b) => Math.max(a, b), 0), seqs.length, 'no tick missing (seq 1..n)')
  for (const topic of [names.decisions, names.outcomes]) {
    const records = await readAll(reader, topic)
    const keys = records.map((r) => `${r.key}|${r.value.toString('utf8')}`)
    t.equal(new Set(keys).size, keys.length, `no ${topic} record twice (${records.length})`)
  }
  const decisionIds = (await readAll(reader, names.decisions)).map((r) => (JSON.parse(r.value.toString('utf8')) as { decision_id?: string }).decision_id)
  t.ok(decisionIds.includes(before.body.data.decision_id) && decisionIds.includes(after.body.data.decision_id), 'both answered decisions are on the log')
  t.equal(new Set(decisionIds).size, decisionIds.length, 'no decision id twice')
})
