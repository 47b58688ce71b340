/**
 * The composition root's time (issue 14, point 1): by default the service runs the simulated venue in the present, so
 * every instant it serves is the clock's and horizons end after "now"; a dated tape (SVC_TAPE) is replay mode and says
 * so with its virtual time; until the market state has caught up after a (re)start the market routes answer the
 * spec's typed 503, not old prices.
 *
 * The present here is a controlled clock: 2026-03-02T12:00:30Z when the test starts, moving at 1x with the machine's
 * clock, and jumped forward by hand to stand for a stop of some minutes. A short history (2 days, fitted on the first
 * one) keeps the warm-up to seconds.
 */
import { privateKeyToAccount } from 'viem/accounts'
import { signIn } from '../helpers/serving/signIn.ts'
import t from 'tap'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { ServiceApp } from '../../app/ServiceApp.ts'
import { loadConfig } from '../../app/config.ts'
import { SyntheticMarket } from '../../ingest/SyntheticMarket.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { EmbeddedLog } from '../../pipeline/log/EmbeddedLog.ts'
import { decodeTickValue } from '../../pipeline/TickEnvelope.ts'
import { topicNames } from '../../pipeline/topics.ts'
import { readAll } from '../helpers/logs.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const MINUTE = 60_000
const PAYER_ACCOUNT = privateKeyToAccount(`0x${'11'.repeat(32)}`)
const PAYER = PAYER_ACCOUNT.address
const OPS = 'ops-token-for-the-test'

/** A present that starts at `startIso` and then moves with the machine clock; `jump` moves it forward by hand. */
function controlledClock(startIso: string) {
  let offset = Date.parse(startIso) - Date.now()
  return {
    now: () => Date.now() + offset,
    jump: (ms: number) => void (offset += ms),
  }
}

interface Running {
  app: ServiceApp
  stop: () => Promise<void>
  /** Times run's onReady hook ran (svc start sets its serving V8 flags there). */
  readyHooks: () => number
}

async function startApp(env: Record<string, string>, clock?: { now(): number }): Promise<Running> {
  const config = loadConfig({ PORT: '0', SVC_RECORD_INTERVAL_S: '0', SVC_OPS_TOKEN: OPS, LOG_LEVEL: 'warn', ...env })
  const app = await ServiceApp.start(config, () => undefined, clock ? { clock } : {})
  const abort = new AbortController()
  let readyHooks = 0
  const running = app.run(abort.signal, { onReady: () => void readyHooks++ })
  return {
    app,
    readyHooks: () => readyHooks,
    stop: async () => {
      abort.abort()
      await app.server.close()
      await running
      await app.close()
    },
  }
}

async function get(app: ServiceApp, path: string, headers: Record<string, string> = {}): Promise<{ status: number; header: string | null; body: any }> {
  const res = await fetch(app.server.url + path, { headers })
  return { status: res.status, header: res.headers.get('x-svc-data-time'), body: await res.json() }
}

async function untilReady(app: ServiceApp, within = 120_000): Promise<void> {
  const deadline = Date.now() + within
  while ((await fetch(app.server.url + '/readyz')).status !== 200) {
    if (Date.now() > deadline) throw new Error('/readyz did not answer 200 in time')
    await sleep(200)
  }
}

t.test('present time under a controlled clock: wall-time instants, horizons after now, no old prices across a restart', async (t) => {
  const dataDir = await makeTempDir(t, 'svc-present-')
  const clock = controlledClock('2026-03-02T12:00:30Z')
  const env = { SVC_DATA_DIR: dataDir, SVC_SIM_HISTORY_DAYS: '2', SVC_TRAIN_DAYS: '1' }

  let run = await startApp(env, clock)
  t.teardown(() => run.stop())
  const early = await get(run.app, '/v1/market/BTC')
  if (early.status === 503) {
    t.match(early.body.error, { code: 'STALE_DATA', retryable: true, detail: { reason: 'WARMING_UP' } }, 'while warming up: the typed 503, not a price')
    t.match(early.header, /; warming_up$/)
  } else {
    t.fail(`the market answered ${early.status} before the warm-up`)
  }
  await untilReady(run.app)
  t.equal(run.readyHooks(), 1, 'onReady ran once, by the time /readyz answered 200')

  const ready = await get(run.app, '/readyz')
  const now = clock.now()
  const dataTime = ready.body.data.data_time
  t.match(dataTime, { mode: 'present', source: 'simulated', simulated: true, speed: 1, warming_up: false })
  const eventTime = Date.parse(dataTime.event_time)
  t.ok(eventTime <= now && eventTime > now - 2 * MINUTE, `event time ${dataTime.event_time} is the present (${new Date(now).toISOString()}), within its minute`)
  t.ok(dataTime.lag_ms >= 0 && dataTime.lag_ms < 2 * MINUTE, `lag ${dataTime.lag_ms} ms`)

  const market = await get(run.app, '/v1/market/BTC')
  t.equal(market.status, 200)
  t.match(market.header, /^present; event_time=2026-03-02T12:\d\d:00\.000Z; source=simulated; quality=simulated$/)
  const quoted = Date.parse(market.body.data.provenance.timestamp)
  t.ok(quoted > now - 2 * MINUTE && quoted <= clock.now(), `the price is of the present: ${market.body.data.provenance.timestamp}`)
  t.equal(market.body.data.provenance.source, 'simulated')

  const granted = await fetch(run.app.server.url + '/v1/billing/grants', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-ops': OPS },
    body: JSON.stringify({ action: 'grant', payer: PAYER, credits: 10_000, ref: 'present-time-test' }),
  })
  t.equal(granted.status, 200)
  // The payer signs in once over HTTP; its session is on the auth.proofs journal, so it still proves it after the restart.
  const proof = await signIn(run.app.server.url, PAYER_ACCOUNT)
  const asked = await fetch(run.app.server.url + '/v1/decisions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...proof.headers },
    body: JSON.stringify({ asset: 'BTC', question_id: 'S03_trend_continuation' }),
  })
  t.equal(asked.status, 200)
  const answer = (await asked.json()) as { data: { created_at: string; horizon_end: string; decision_id: string }; meta: { signatures: Array<{ signer: string }> } }
  const decision = answer.data
  // Issue 29: the app's answer key (made once in the data folder) signs the paid answer, and its receipt verifies.
  const receipt = { poj_id: decision.decision_id, body: decision, signature: answer.meta.signatures[0] }
  const verified = await fetch(run.app.server.url + '/v1/verify', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(receipt) })
  t.match(((await verified.json()) as { data: unknown }).data, { valid: true, signature: { ok: true }, ledger: { status: 'match' } }, 'the paid answer\'s receipt verifies')
  t.equal((await stat(join(dataDir, 'answer-keys', 'keyring.json'))).mode & 0o777, 0o600, 'the keyring is 0600')
  const askedAt = clock.now()
  t.ok(Date.parse(decision.created_at) <= askedAt && Date.parse(decision.created_at) > askedAt - 2 * MINUTE, `created_at ${decision.created_at} is now`)
  t.ok(Date.parse(decision.horizon_end) > askedAt, `horizon_end ${decision.horizon_end} is after now (${new Date(askedAt).toISOString()})`)

  // The duel is wired over the engine's ledger: a call on the decision just asked is locked before its horizon (paid
  // with credits) and survives the restart below; a refusal decision (an unfitted model on this short history) has
  // no clock to call and is refused for nothing.
  const askedRecord = decision as { decision_id?: string; action?: string }
  const locked = await fetch(run.app.server.url + '/v1/calls', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...proof.headers },
    body: JSON.stringify({ decision_id: askedRecord.decision_id, call: 'obtains', call_probability: 0.6 }),
  })
  const lockedBody = (await locked.json()) as { data?: { status: string; horizon_end: string }; error?: { detail: { reason: string } } }
  const claim = askedRecord.action !== 'refuse'
  if (claim) t.match(lockedBody.data, { status: 'locked', horizon_end: decision.horizon_end }, 'a claim: the call is locked')
  else t.equal(lockedBody.error?.detail.reason, 'NOT_A_CLAIM', 'a refusal decision: no clock to call')
  t.equal(locked.status, claim ? 201 : 400)

  // Stop, let ten minutes pass, start again: the gap is simulated, and old prices are refused until it is in.
  await run.stop()
  clock.jump(10 * MINUTE)
  run = await startApp(env, clock)
  const restarted = await get(run.app, '/v1/market/BTC')
  t.equal(restarted.status, 503, 'right after the restart: no old price')
  t.equal(restarted.body.error.detail.reason, 'WARMING_UP')
  t.equal((await fetch(run.app.server.url + '/readyz')).status, 503, 'not ready while warming up')
  await untilReady(run.app)
  const after = await get(run.app, '/v1/market/BTC')
  t.equal(after.status, 200)
  const quotedAfter = Date.parse(after.body.data.provenance.timestamp)
  t.ok(quotedAfter > clock.now() - 2 * MINUTE, `after the restart the price is of the new present: ${after.body.data.provenance.timestamp}`)
  const calls = (await get(run.app, `/v1/calls?payer=${PAYER}`, proof.headers)).body.data
  const reread = await get(run.app, `/v1/decisions/${decision.decision_id}`)
  t.equal(reread.body.meta.signatures[0].signer, answer.meta.signatures[0]!.signer, 'after the restart the same key signs')
  t.equal(calls.calls, claim ? 1 : 0, 'the call book was rebuilt from the log')
  await run.stop()

  // The gap was generated once: no record twice in the log, none missing.
  const log = await EmbeddedLog.open(join(dataDir, 'log'))
  t.teardown(() => log.close())
  const seqs = (await readAll(log, topicNames().ticks)).map((r) => decodeTickValue(r.value).seq!)
  t.equal(new Set(seqs).size, seqs.length, `no record twice (${seqs.length} ticks)`)
  t.equal(seqs.reduce((a, b) => Math.max(a, b), 0), seqs.length, 'no record missing')
  run = { app: run.app, stop: async () => undefined, readyHooks: () => 0 }
})

t.test('a dated tape is replay mode: answers and /readyz say so and give the virtual time', async (t) => {
  const dataDir = await makeTempDir(t, 'svc-replay-')
  const tape = join(dataDir, 'two-days.ndjson.gz')
  const writer = TapeWriter.open(tape, { gzipLevel: 1 })
  await new SyntheticMarket({ seed: 7, hours: 48, assets: ['BTC', 'ETH', 'SOL'], start: '2026-01-10T00:00:00Z' }).writeTo(writer)
  await writer.close()

  const run = await startApp({ SVC_DATA_DIR: join(dataDir, 'data'), SVC_TAPE: tape, SVC_REPLAY_SPEED: '0', SVC_TRAIN_DAYS: '1' })
  t.teardown(() => run.stop())
  await untilReady(run.app)
  const ready = await get(run.app, '/readyz')
  t.match(ready.body.data.data_time, { mode: 'replay', source: 'simulated', simulated: true, quality: 'simulated', speed: 0, lag_ms: null, warming_up: false })
  t.equal(ready.body.data.venue, null, 'no live venue connector on a tape')
  t.equal(ready.body.data.data_time.event_time, '2026-01-12T00:00:00.000Z', 'the virtual time: the tape has played to its end')
  t.equal(ready.header, 'replay; virtual_time=2026-01-12T00:00:00.000Z; speed=0; source=simulated; quality=simulated')
  const market = await get(run.app, '/v1/market/BTC')
  t.equal(market.status, 200)
  t.equal(market.header, ready.header, 'every answer carries it')
  t.equal(market.body.data.provenance.age_ms, 0, 'freshness in the virtual time: the last tick is at the virtual now')

  // Issue 33 item 5: a simulated tape says SIMULATED where people and agents look first, as the header does.
  const page = await (await fetch(run.app.server.url + '/record')).text()
  t.match(page, /<div class="banner simulated" role="note" data-data-kind="&quot;simulated&quot;"/, '/record: a SIMULATED banner')
  t.match(page, "A dated tape of the built-in market generator, replayed at as fast as possible; not a real market.")
  t.match(page, `<code data-data-header>${ready.header}</code>`, 'beside the header it is made from')
  t.match(await (await fetch(run.app.server.url + '/llms.txt')).text(), '**Data: SIMULATED.** A dated tape of the built-in market generator')
  const card = await (await fetch(run.app.server.url + '/.well-known/agent.json')).json()
  t.match(card.data, { kind: 'simulated', simulated: true, mode: 'replay', source: 'simulated' })
  t.match(await (await fetch(run.app.server.url + '/.well-known/ai.txt')).text(), '# Data: SIMULATED. A dated tape')
})
