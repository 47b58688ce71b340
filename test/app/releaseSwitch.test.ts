/**
 * Issue 30: only released models are sold, and activation switches what a running service sells.
 *
 * The operator's path, as README shows it: `svc release build | evaluate | activate | rollback` (child processes) on
 * the recorded OKX SOL tape. Release A (1.0.0: S01 only, against the base rate) and release B (1.1.0: S01, S03, S04,
 * S05, parent A, against A) are built and evaluated; both pass their four gates; A is activated before the service
 * starts. The service (the simulated venue in a controlled present, no bootstrap release) then sells a bounded burst
 * of paid asks, one at a time, a new venue minute per round, while `svc release activate 1.1.0` runs beside it:
 * - every new decision names its release, the ones answered before the switch A, every one after it B (one
 *   transition in answer order), none lost (each answer's id is on the ledger) and none twice (one debit each);
 * - replay of an A decision and of a B decision reproduces its verdict, lineage names the release;
 * - `svc release rollback` brings A back the same way;
 * - no fit runs in the service after start (every question model's fit is watched);
 * - a tampered body (one parameter of the Parquet row's copy changed, its sealed checksum kept) is refused at the
 *   next start: that family refuses release_params_altered on /v1/signals, /readyz and in the decisions.
 */
import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { readdir, rename } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { privateKeyToAccount } from 'viem/accounts'
import { DuckDBInstance } from '@duckdb/node-api'
import { ServiceApp } from '../../app/ServiceApp.ts'
import { loadConfig } from '../../app/config.ts'
import { canonicalJson } from '../../common/jcs.ts'
import { QUESTIONS } from '../../models/questions/index.ts'
import { RELEASE_ROWS, releaseTableRoot } from '../../sql/releaseTables.ts'
import { SOL_FILES } from '../helpers/engine.ts'
import { signIn } from '../helpers/serving/signIn.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const exec = promisify(execFile)
const SVC = new URL('../../bin/svc.js', import.meta.url).pathname
const OPS = 'ops-token-release-switch'
const PAYER_ACCOUNT = privateKeyToAccount(`0x${'22'.repeat(32)}`)
const PAYER = PAYER_ACCOUNT.address
const A = '1.0.0'
const B = '1.1.0'
const COMBOS = (['S01_market_regime', 'S03_trend_continuation', 'S04_drawdown_risk', 'S05_volatility_expansion'] as const).flatMap((q) => (['BTC', 'ETH', 'SOL'] as const).map((asset) => ({ question_id: q, asset })))

async function svc(args: string[], dataDir: string): Promise<string> {
  const r = await exec('node', [SVC, ...args, '--data-dir', dataDir], { env: { ...process.env, CI: 'true', LOG_FORMAT: 'json', LOG_LEVEL: 'warn' }, maxBuffer: 64 * 1024 * 1024 })
  return r.stdout
}

/** Every question model's fit, counted from now on (the models are shared instances: their prototypes are patched). */
function watchFits(t: Test): { calls: () => number } {
  let calls = 0
  const patched = new Set<object>()
  for (const q of QUESTIONS) {
    const proto = Object.getPrototypeOf(q) as { fit: (...a: unknown[]) => unknown }
    if (patched.has(proto)) continue
    patched.add(proto)
    const original = proto.fit
    proto.fit = function (this: unknown, ...a: unknown[]) {
      calls++
      return original.apply(this, a)
    }
    t.teardown(() => void (proto.fit = original))
  }
  return { calls: () => calls }
}

interface Asked {
  decision_id: string
  question_id: string
  asset: string
  created_at: string
  decision: string
}

t.test('activation and rollback switch a running service between sealed releases; a tampered body is refused', async (t) => {
  const dir = await makeTempDir(t, 'svc-release-switch-')
  const dataDir = join(dir, 'data')
  const tapes = SOL_FILES.flatMap((f) => ['--tape', f])

  // The operator builds and evaluates both releases on the recorded tape, and activates A.
  await svc(['release', 'build', '--version', A, '--parent', 'none', '--method', 'v2', ...tapes, '--window-end', '2026-05-01', '--questions', 'S01_market_regime', '--json'], dataDir)
  await svc(['release', 'evaluate', A], dataDir)
  await svc(['release', 'build', '--version', B, '--parent', A, '--method', 'v2', ...tapes, '--window-end', '2026-05-01', '--questions', 'S01_market_regime,S03_trend_continuation,S04_drawdown_risk,S05_volatility_expansion', '--json'], dataDir)
  await svc(['release', 'evaluate', B], dataDir)
  const listed = JSON.parse(await svc(['release', 'list', '--json'], dataDir)) as { releases: Array<{ version: string; gates: Array<{ met: boolean }> }> }
  t.ok(listed.releases.every((r) => r.gates.length === 4 && r.gates.every((g) => g.met)), 'both releases pass their four gates on the tape')
  await svc(['release', 'activate', A], dataDir)

  let offset = Date.parse('2026-06-10T12:00:30Z') - Date.now()
  const clock = { now: () => Date.now() + offset }
  const env = { PORT: '0', SVC_DATA_DIR: dataDir, SVC_SIM_HISTORY_DAYS: '9', SVC_TRAIN_DAYS: '8', SVC_BOOTSTRAP_RELEASE: 'off', SVC_RECORD_INTERVAL_S: '0',
    // The checks read every decision back and the burst reads the balance around each ask: a quick loop would meet the
    // rate limits (per IP 60 burst, per payer 120), which are not what this test is about.
    SVC_RATE_IP_BURST: '100000', SVC_RATE_IP_PER_S: '100000', SVC_RATE_PAYER_BURST: '100000', SVC_RATE_PAYER_PER_S: '100000', SVC_OPS_TOKEN: OPS, LOG_LEVEL: 'warn' }
  const start = async () => {
    const app = await ServiceApp.start(loadConfig(env), () => undefined, { clock })
    const abort = new AbortController()
    const running = app.run(abort.signal)
    const deadline = Date.now() + 300_000
    while ((await fetch(app.server.url + '/readyz')).status !== 200) {
      if (Date.now() > deadline) throw new Error('/readyz did not answer 200')
      await sleep(200)
    }
    return {
      app,
      stop: async () => {
        abort.abort()
        await app.server.close()
        await running
        await app.close()
      },
    }
  }
  let run = await start()
  let running = true
  t.teardown(async () => {
    if (running) await run.stop() // also when an assertion above threw: the service must not hold the process open
  })
  const fits = watchFits(t)
  const url = () => run.app.server.url
  const get = async (path: string) => (await (await fetch(url() + path)).json()) as any
  const signals = () => get('/v1/signals') as Promise<{ data: { release: { version: string | null; families: Record<string, string> }; questions: Array<{ question_id: string; available: boolean; reason: string | null }> } }>

  t.equal((await signals()).data.release.version, A, 'the service serves the active release A from its start')
  const granted = await fetch(url() + '/v1/billing/grants', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-ops': OPS },
    body: JSON.stringify({ action: 'grant', payer: PAYER, credits: 1_000_000, ref: 'release-switch' }),
  })
  t.equal(granted.status, 200)
  const proof = await signIn(url(), PAYER_ACCOUNT)
  const balance = async () =>
    ((await (await fetch(`${url()}/v1/billing/credits?payer=${PAYER}`, { headers: proof.headers })).json()) as { data: { balance_credits: number } }).data.balance_credits

  /** The venue moves a minute on: a new snapshot, so an ask is a new decision (identical inputs re-serve the recorded one). */
  const nextMinute = async () => {
    const before = Date.parse(((await get('/readyz')) as { data: { data_time: { event_time: string } } }).data.data_time.event_time)
    offset += 60_000
    for (let i = 0; ; i++) {
      const now = Date.parse(((await get('/readyz')) as { data: { data_time: { event_time: string } } }).data.data_time.event_time)
      if (now > before) break
      if (i > 600) throw new Error('the venue did not move on')
      await sleep(50)
    }
  }
  /** One round: a new venue minute, then every combination is asked once. */
  const answers: Array<{ id: string; release: string | null; reserved: boolean; charged: number }> = []
  const round = async () => {
    await nextMinute()
    for (const c of COMBOS) {
      const paidBefore = await balance()
      const res = await fetch(url() + '/v1/decisions', { method: 'POST', headers: { 'content-type': 'application/json', ...proof.headers }, body: JSON.stringify(c) })
      t.equal(res.status, 200, `${c.question_id} ${c.asset} answered`)
      const d = ((await res.json()) as { data: Asked }).data
      const lineage = (await get(`/v1/lineage/${d.decision_id}`)) as { data: { hashes: { release_version?: string | null } } }
      const charged = paidBefore - (await balance())
      answers.push({ id: d.decision_id, release: lineage.data.hashes.release_version ?? null, reserved: charged === 0, charged })
    }
  }

  for (let r = 0; r < 2; r++) await round()
  // The operator activates B while the burst goes on.
  const activation = svc(['release', 'activate', B], dataDir)
  for (let r = 0; r < 3; r++) await round()
  await activation
  for (let i = 0; (await signals()).data.release.version !== B; i++) {
    if (i > 100) throw new Error('the service did not switch to B')
    await sleep(100)
  }
  for (let r = 0; r < 2; r++) await round()

  const releasesInOrder = answers.map((a) => a.release)
  const firstB = releasesInOrder.indexOf(B)
  t.ok(firstB > 0, `A answered first, then B (first B at answer ${firstB} of ${answers.length})`)
  t.ok(releasesInOrder.slice(0, firstB).every((r) => r === A), 'every decision before the switch carries A')
  t.ok(releasesInOrder.slice(firstB).every((r) => r === B), 'every decision after it carries B')
  t.ok(answers.slice(-2 * COMBOS.length).every((a) => a.release === B), 'the rounds after the switch are all B')
  t.equal(new Set(answers.map((a) => a.id)).size, answers.length, 'each ask a decision of its own (a new venue minute each round)')
  t.ok(answers.every((a) => a.charged > 0 && !a.reserved), 'each decision charged once')
  const missing: string[] = []
  for (const a of answers) {
    const row = (await get(`/v1/decisions/${a.id}`)) as { data?: { decision_id: string } }
    if (row.data?.decision_id !== a.id) missing.push(a.id)
  }
  t.same(missing, [], 'every answered decision is on the ledger')

  // Replay of both releases' decisions reproduces their verdicts.
  for (const rel of [A, B]) {
    const sample = answers.find((a) => a.release === rel)!
    const res = await fetch(`${url()}/v1/decisions/${sample.id}/replay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    const body = (await res.json()) as { data: { original_verdict: string; replayed_verdict: string; deterministic: boolean } }
    t.equal(res.status, 200)
    t.equal(body.data.replayed_verdict, body.data.original_verdict, `replay of a ${rel} decision reproduces its verdict`)
  }
  const s01 = (await signals()).data.questions.find((q) => q.question_id === 'S03_trend_continuation')!
  t.not(s01.reason, 'release_lacks_family', 'B serves S03 (A did not)')

  // Rollback: a new activation of the parent, followed the same way.
  await svc(['release', 'rollback'], dataDir)
  for (let i = 0; (await signals()).data.release.version !== A; i++) {
    if (i > 100) throw new Error('the service did not roll back to A')
    await sleep(100)
  }
  const afterB = answers.length
  await round()
  t.ok(answers.slice(afterB).every((a) => a.release === A), 'after the rollback every decision carries A again')
  const s03 = (await signals()).data.questions.find((q) => q.question_id === 'S03_trend_continuation')!
  t.same([s03.available, s03.reason], [false, 'release_lacks_family'], 'A holds no S03: blocked, and why')
  const intelligence = (await get('/v1/intelligence/releases')) as { data: { releases: Array<{ version: string; status: string }> } }
  t.same(intelligence.data.releases.map((r) => [r.version, r.status]), [[A, 'active'], [B, 'superseded']], 'the release feed shows the rollback')

  t.equal(fits.calls(), 0, 'no model was fitted in the running service after start')
  running = false
  await run.stop()

  // Tamper with A's sealed body: one S01 parameter of the Parquet row's copy, its sealed checksum kept.
  const root = releaseTableRoot(dataDir, RELEASE_ROWS)
  const file = join(root, (await readdir(root)).find((f) => f === `release-${A}.parquet`)!)
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  const [row] = (await (await conn.runAndReadAll(`SELECT body FROM read_parquet('${file}')`)).getRowObjectsJson()) as Array<{ body: string }>
  const body = JSON.parse(row!.body) as { families: Record<string, { fitted: { params: Record<string, unknown> } }> }
  const params = body.families.S01_market_regime!.fitted.params
  const key = Object.keys(params).find((k) => typeof params[k] === 'number')!
  params[key] = (params[key] as number) + 0.001
  const tampered = canonicalJson(body)
  await conn.run(`COPY (SELECT * REPLACE ($body AS body) FROM read_parquet('${file}')) TO '${file}.tmp' (FORMAT parquet)`, { body: tampered })
  conn.closeSync()
  await rename(`${file}.tmp`, file)

  run = await start()
  running = true
  const refused = (await signals()).data
  t.equal(refused.release.version, A)
  t.equal(refused.release.families.S01_market_regime, 'release_params_altered', 'the altered family is refused at load')
  t.match(refused.questions.find((q) => q.question_id === 'S01_market_regime'), { available: false, reason: 'release_params_altered' })
  const ready = (await (await fetch(url() + '/readyz')).json()) as any
  t.match(JSON.stringify(ready), /RELEASE_PARAMS_ALTERED/, '/readyz says why')
  const proof2 = await signIn(url(), PAYER_ACCOUNT)
  await nextMinute() // the last minute before the stop was decided under the intact body: a new instant is asked
  const asked = await fetch(url() + '/v1/decisions', { method: 'POST', headers: { 'content-type': 'application/json', ...proof2.headers }, body: JSON.stringify({ question_id: 'S01_market_regime', asset: 'BTC' }) })
  const refusal = ((await asked.json()) as { data: { decision_id: string; decision: string; probability: number } }).data
  t.same([refusal.decision, refusal.probability], ['insufficient_confidence', 0], 'an ask of the altered family refuses')
})
