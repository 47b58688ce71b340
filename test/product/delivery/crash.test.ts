/**
 * Issue 17 acceptance: SIGKILL during delivery. A process arms 200 resolution hooks; a second process, started with
 * every clock resolved, delivers them to a slow receiver and is SIGKILLed midway; a third delivers the rest. Every
 * resolution arrives (some twice: the ones in flight at the kill, under the same delivery id, which is what a receiver
 * dedupes on), every signature verifies, and the delivery record holds each attempt exactly once.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { DELIVERY_ATTEMPTS, type AttemptRow } from '../../../pipeline/records/deliveryRecord.ts'
import { startReceiver } from '../../helpers/delivery/receivers.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const CHILD = new URL('../../fixtures/delivery-child.ts', import.meta.url).pathname
const N = 200

function run(args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { env: { ...process.env, LOG_LEVEL: 'error' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, out, err })),
  )
  return { child, exit }
}

t.test('SIGKILL during delivery: after restart each resolution is delivered, each attempt recorded once', async (t) => {
  const dir = await makeTempDir(t, 'svc-delivery-crash-')
  const rx = await startReceiver(t)
  rx.answer = () => ({ status: 200, delayMs: 40 })
  const decisions = Array.from({ length: N }, () => ({ decision_id: randomUUID() }))
  await writeFile(join(dir, 'ledger.json'), JSON.stringify({ decisions }))

  const reg = await run([dir, 'register', rx.url]).exit
  t.equal(reg.code, 0, reg.err)
  const secrets = JSON.parse(reg.out) as Record<string, string>
  for (const [id, secret] of Object.entries(secrets)) rx.secrets.set(`/h/${id}`, secret)

  const first = run([dir, 'deliver'])
  await rx.waitFor(N / 4, 60_000)
  first.child.kill('SIGKILL')
  const killed = await first.exit
  t.equal(killed.signal, 'SIGKILL', 'killed mid-delivery')
  const beforeRestart = new Set(rx.received.map((r) => r.headers['x-svc-delivery-id'])).size
  t.ok(beforeRestart < N, `killed before the end (${beforeRestart} of ${N} delivered)`)

  const second = await run([dir, 'deliver']).exit
  t.equal(second.code, 0, second.err)

  const byId = new Map<string, string>()
  for (const r of rx.received) byId.set(r.headers['x-svc-delivery-id']!, r.path)
  t.equal(new Set([...byId.values()]).size, N, 'every resolution delivered')
  t.ok(rx.received.every((r) => r.verified === true), 'every delivery, before and after the kill, verifies')
  const resent = rx.received.length - byId.size
  t.ok(resent <= 8, `at most the attempts in flight at the kill were re-sent (${resent}), under their delivery id`)

  const log = await EmbeddedLog.open(join(dir, 'log'))
  t.teardown(() => log.close())
  const rows: AttemptRow[] = []
  const f = await (await Journal.open({ log, def: DELIVERY_ATTEMPTS })).follow('t.crash', (r) => rows.push(r))
  await f.stop()
  const ids = rows.map((r) => r.id)
  t.equal(ids.length, new Set(ids).size, 'no attempt recorded twice')
  t.equal(rows.length, N, 'one row per resolution: each delivered at its first attempt')
  t.ok(rows.every((r) => r.status === 'delivered' && r.final && r.attempt === 1))
  t.same(new Set(rows.map((r) => r.delivery_id)), new Set(byId.keys()), 'the record and the receiver agree on the delivery ids')
})
