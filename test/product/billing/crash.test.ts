/**
 * ACCEPTANCE: SIGKILL the server process during a burst of paid calls. After restart every debit has its answer
 * receipt or its reversal, never neither; every delivered answer is charged exactly once; no debit id or draw id
 * appears twice. Design (issue 11, item 7): a paid call's debit, the record its answer writes and its answer receipt
 * are appended as one atomic unit of the event log, so a crash leaves all three or none: no debit is ever left
 * without its receipt (the start-up recovery pass, which reverses such debits in older logs, finds nothing).
 */
import { privateKeyToAccount } from 'viem/accounts'
import { signIn } from '../../helpers/serving/signIn.ts'
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { DRAWS } from '../../../pipeline/records/drawRecord.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { OPS_TOKEN } from '../../helpers/serving/billing.ts'
import { WORK_JOURNAL } from '../../helpers/serving/workRoutes.ts'

const REPO = new URL('../../../', import.meta.url).pathname
const ACCOUNT = privateKeyToAccount(`0x${'33'.repeat(32)}`)
const PAYER = ACCOUNT.address

interface Child {
  proc: ChildProcess
  url: string
  recovered: string[]
  /** The credit ledger started from its state snapshot (the fixture snapshots every 200 ms). */
  restored: boolean
}

async function startServer(dir: string): Promise<Child> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'test/fixtures/billing-server.ts'), dir], {
    cwd: REPO,
    env: { ...process.env, SVC_OPS_TOKEN: OPS_TOKEN, LOG_LEVEL: 'error' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: proc.stdout! })
    rl.once('line', resolve)
    proc.once('exit', (code) => reject(new Error(`server exited early (${code})`)))
  })
  const { port, recovered, restored } = JSON.parse(line) as { port: number; recovered: string[]; restored: boolean }
  return { proc, url: `http://127.0.0.1:${port}`, recovered, restored }
}

const exited = (p: ChildProcess) => new Promise<void>((resolve) => (p.exitCode !== null || p.signalCode !== null ? resolve() : p.once('exit', () => resolve())))

t.test('ACCEPTANCE: SIGKILL during a burst of paid calls: every debit has its answer or its reversal', async (t) => {
  const dir = await makeTempDir(t, 'svc-billing-crash-')
  const first = await startServer(dir)
  t.teardown(() => first.proc.kill('SIGKILL'))
  const granted = await fetch(`${first.url}/v1/billing/grants`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-ops': OPS_TOKEN },
    body: JSON.stringify({ action: 'grant', payer: PAYER, credits: 1_000_000, ref: 'crash' }),
  })
  t.equal(granted.status, 200)
  // The payer proves control once; its session is journaled, so it still proves the payer after the crash.
  const proof = await signIn(first.url, ACCOUNT)

  const answered: string[] = []
  let failed = 0
  let killed = false
  const burst = Array.from({ length: 300 }, (_, i) =>
    fetch(`${first.url}/v1/test/work`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...proof.headers },
      // Staggered handler times keep calls in every stage (held, unit appending, answered) when the kill lands.
      body: JSON.stringify({ question_id: 'S03_trend_continuation', n: 200, work_ms: 20 + (i % 20) * 25 }),
    })
      .then(async (res) => {
        const body = JSON.parse(await res.text())
        if (res.status === 200) answered.push(body.data.payment_id)
        if (answered.length >= 40 && !killed) {
          killed = true
          first.proc.kill('SIGKILL')
        }
      })
      .catch(() => void failed++),
  )
  await Promise.all(burst)
  await exited(first.proc)
  t.ok(killed, 'killed mid-burst')
  t.ok(failed > 0, `${failed} calls lost their connection`)

  const second = await startServer(dir)
  t.teardown(() => second.proc.kill('SIGKILL'))
  t.equal(second.restored, true, 'the restart loads the credit state snapshot written before the kill and reads the tail')
  t.same(second.recovered, [], 'no debit without its receipt: they are appended in one unit with the answer')
  const credits = (await (await fetch(`${second.url}/v1/billing/credits?payer=${PAYER}`, { headers: proof.headers })).json()) as { data: { balance_credits: number } }
  second.proc.kill('SIGTERM')
  await exited(second.proc)

  const log = await EmbeddedLog.open(join(dir, 'log'))
  const journal = await Journal.open({ log, def: DRAWS })
  const rows = await journal.readAll()
  await journal.close()
  const workJournal = await Journal.open({ log, def: WORK_JOURNAL })
  const work = await workJournal.readAll()
  await workJournal.close()
  await log.close() // releases the directory lock for the next start
  t.equal(new Set(rows.map((r) => r.id)).size, rows.length, 'no draw id appears twice')
  const debits = rows.filter((r) => r.kind === 'debit')
  const answers = new Set(rows.filter((r) => r.kind === 'answer').map((r) => r.ref))
  const refunds = rows.filter((r) => r.kind === 'refund')
  const refunded = new Set(refunds.map((r) => r.ref))
  t.equal(new Set(debits.map((r) => r.ref)).size, debits.length, 'one debit row per payment id: no debit id replayed')
  t.equal(refunded.size, refunds.length, 'at most one refund per debit')
  const neither = debits.filter((d) => !answers.has(d.ref) && !refunded.has(d.ref))
  t.same(neither, [], 'every debit has its answer receipt or its reversal')
  t.same(debits.filter((d) => answers.has(d.ref) && refunded.has(d.ref)), [], 'an answered debit is never reversed')
  for (const id of answered) t.ok(answers.has(id) && !refunded.has(id), `delivered answer ${id} is charged once`)
  t.same(new Set(second.recovered), refunded, 'the refunds are exactly the recovered debits')
  t.same(new Set(work.map((w) => w.payment_id)), new Set(debits.map((d) => d.ref)), 'every journaled answer has its debit and every debit its answer: all or nothing')
  t.equal(work.length, debits.length, 'one answer per debit')
  t.ok(debits.length >= answered.length, `${debits.length} debits for ${answered.length} delivered answers (a durable answer whose response the crash cut is charged, and readable)`)
  const charged = debits.filter((d) => !refunded.has(d.ref)).length
  t.equal(credits.data.balance_credits, 1_000_000 - 1000 * charged, 'balance after restart = grant − answered debits')

  // A second restart finds nothing left to recover.
  const third = await startServer(dir)
  t.teardown(() => third.proc.kill('SIGKILL'))
  t.same(third.recovered, [], 'recovery is idempotent')
  third.proc.kill('SIGTERM')
  await exited(third.proc)
})
