/**
 * Leases on a real broker (pipeline/log/KafkaLease.ts): one holder among the members of a lease's group, the same
 * holder seen from every member, kept when a member joins (sticky), handed on at once when the holder leaves and
 * after the session timeout when it dies without leaving (SIGKILL); a SoleLease (the embedded log) is always held.
 * A member kafkajs gave up on rejoins through the one retry policy, about a session timeout between attempts, until
 * it joins or the lease closes.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { KafkaLog } from '../../../pipeline/log/KafkaLog.ts'
import { KafkaLease, stickyLeaseAssignment } from '../../../pipeline/log/KafkaLease.ts'
import { SoleLease, openLease } from '../../../pipeline/log/Lease.ts'
import { AssignerProtocol } from 'kafkajs'
import { ownBroker, ownBrokerSkip } from '../../helpers/broker.ts'
import { kafkaBrokers, kafkaSkip, makeEmbeddedFactory, type TapTest } from '../../helpers/logs.ts'
import { until } from '../../helpers/until.ts'

const skip = kafkaSkip(t)
// The rejoin test stops a broker: its own, never the shared one the other files use.
const ownSkip = ownBrokerSkip(t)
const SESSION_MS = 6_000
const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url))
const REPO = fileURLToPath(new URL('../../../', import.meta.url))

const prefixOf = () => `t${Math.random().toString(16).slice(2, 12)}.`

async function member(t: TapTest, prefix: string, instance: string): Promise<{ log: KafkaLog; lease: KafkaLease }> {
  const log = await KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: `svc-test-${instance}`, topicPrefix: prefix, instanceId: instance, sessionTimeoutMs: SESSION_MS })
  const lease = await KafkaLease.open(log, 'feed', { instance, url: `http://127.0.0.1/${instance}` })
  t.teardown(async () => {
    await lease.close()
    await log.close()
  })
  return { log, lease }
}

const holders = (members: ReadonlyArray<{ lease: KafkaLease }>) => members.filter((m) => m.lease.held)

t.test('the assignment keeps the lease with the member that says it holds it, else gives it to the lowest member id', async (t) => {
  const meta = (holds: boolean, instance: string) => AssignerProtocol.MemberMetadata.encode({ version: 0, topics: ['x'], userData: Buffer.from(JSON.stringify({ instance, url: null, holds: holds ? [0] : [] })) })
  const owner = (out: ReturnType<typeof stickyLeaseAssignment>) => out.filter((a) => (AssignerProtocol.MemberAssignment.decode(a.memberAssignment)?.assignment['x'] ?? []).includes(0)).map((a) => a.memberId)
  t.same(owner(stickyLeaseAssignment('x', [{ memberId: 'b', memberMetadata: meta(false, 'b') }, { memberId: 'a', memberMetadata: meta(false, 'a') }])), ['a'], 'no holder: the lowest member id')
  t.same(owner(stickyLeaseAssignment('x', [{ memberId: 'a', memberMetadata: meta(false, 'a') }, { memberId: 'c', memberMetadata: meta(true, 'c') }, { memberId: 'b', memberMetadata: meta(false, 'b') }])), ['c'], 'the holder keeps it')
  t.same(owner(stickyLeaseAssignment('x', [{ memberId: 'c', memberMetadata: meta(true, 'c') }, { memberId: 'b', memberMetadata: meta(true, 'b') }])), ['b'], 'two claims (a healed split): the lowest of them')
  const all = stickyLeaseAssignment('x', [{ memberId: 'a', memberMetadata: Buffer.alloc(0) }, { memberId: 'b', memberMetadata: meta(false, 'b') }])
  t.equal(all.length, 2, 'every member gets an assignment, empty for all but one')
  t.same(owner(all), ['a'], 'unreadable metadata counts as not holding')
})

t.test('a SoleLease (the embedded log, or one instance) is held from the start and names this instance', async (t) => {
  const { makeLog } = await makeEmbeddedFactory(t)
  const lease = await openLease(await makeLog(), 'feed', { instance: 'this', url: null }, true)
  t.ok(lease instanceof SoleLease)
  t.equal(lease.held, true)
  await lease.acquired()
  t.same(await lease.holder(), { instance: 'this', url: null })
})

t.test('one holder among three; every member names it; a newcomer does not take it; a leaving holder hands it on at once', { skip }, async (t) => {
  const prefix = prefixOf()
  const members = [await member(t, prefix, 'a'), await member(t, prefix, 'b'), await member(t, prefix, 'c')]
  await until('the group settled with one holder', async () => holders(members).length === 1 && (await members[0]!.lease.holder()) !== null, 30_000)
  const first = holders(members)[0]!
  const firstName = (await first.lease.holder())!.instance
  t.ok(['a', 'b', 'c'].includes(firstName))
  t.equal(first, members.find((m) => m.log.instanceId === firstName), 'the holder is the member that says it holds it')
  for (const m of members) t.same(await m.lease.holder(), { instance: firstName, url: `http://127.0.0.1/${firstName}` }, `member ${m.log.instanceId} sees the same holder`)

  const newcomer = await member(t, prefix, '0-newcomer')
  members.push(newcomer)
  await until('the group settled after the newcomer joined', async () => (await newcomer.lease.holder()) !== null && holders(members).length === 1, 30_000)
  t.equal(holders(members)[0], first, 'the newcomer (lowest id) did not take the lease from its live holder')
  t.equal(newcomer.lease.held, false)

  const handedOn = Date.now()
  const next = new Promise<void>((resolve) => {
    for (const m of members) if (m !== first) m.lease.acquired().then(resolve, () => {})
  })
  await first.lease.close()
  await next
  const took = Date.now() - handedOn
  t.ok(took < SESSION_MS, `a leaving holder hands the lease on without waiting for the session timeout (${took} ms)`)
  const rest = members.filter((m) => m !== first)
  await until('one holder among the rest', () => holders(rest).length === 1, 30_000)
  t.equal(holders(members).length, 1, 'exactly one holder')
  t.equal(first.lease.held, false)
})

t.test('a holder killed without leaving (SIGKILL) holds the lease until its session times out; then another member does', { skip }, async (t) => {
  const prefix = prefixOf()
  const child = spawn(process.execPath, ['--import', 'tsx', join(FIXTURES, 'kafka-lease-holder.ts'), kafkaBrokers()!.join(','), prefix, 'child', String(SESSION_MS)], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  t.teardown(async () => {
    child.kill('SIGKILL')
    await exited
  })
  const lines = createInterface({ input: child.stdout })
  const firstLine = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve)
    child.once('exit', (code, signal) => reject(new Error(`the holder exited early (${code ?? signal}): ${stderr}`)))
  })
  t.equal(firstLine, 'held', 'the first member of the group holds the lease')
  const survivor = await member(t, prefix, 'survivor')
  await until('the survivor joined beside the holder', async () => (await survivor.lease.holder())?.instance === 'child', 30_000)
  t.equal(survivor.lease.held, false, 'the survivor waits while the holder lives')
  const killed = Date.now()
  child.kill('SIGKILL')
  await exited
  await survivor.lease.acquired()
  const took = Date.now() - killed
  t.ok(took >= SESSION_MS - 1_000, `the lease stayed with the dead holder for its session (${took} ms)`)
  t.ok(took < SESSION_MS + 20_000, `then moved to the survivor (${took} ms)`)
  t.same(await survivor.lease.holder(), { instance: 'survivor', url: 'http://127.0.0.1/survivor' })
})

t.test('acquired() rejects on abort and on close', { skip }, async (t) => {
  const prefix = prefixOf()
  const a = await member(t, prefix, 'a')
  const b = await member(t, prefix, 'b')
  await until('one holder', () => holders([a, b]).length === 1, 30_000)
  const waiter = a.lease.held ? b : a
  const ac = new AbortController()
  const aborted = waiter.lease.acquired(ac.signal)
  ac.abort(new Error('stop'))
  await t.rejects(aborted, /stop/)
  const closing = waiter.lease.acquired()
  await waiter.lease.close()
  await t.rejects(closing, { code: 'LOG_CLOSED' })
})

t.test('a lease whose rejoin fails tries again about a session timeout later, joins once the broker is back, and stops at once when closed', { skip: ownSkip, timeout: 400_000 }, async (t) => {
  const broker = await ownBroker(t)
  const child = spawn(process.execPath, ['--import', 'tsx', join(FIXTURES, 'kafka-lease-rejoin.ts'), broker.brokers, prefixOf(), 'solo', String(SESSION_MS)], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] })
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  t.teardown(async () => {
    child.kill('SIGKILL')
    await exited
  })
  const out: string[] = []
  const warnings: Array<{ attempt?: number; waitMs?: number }> = []
  let stderr = ''
  createInterface({ input: child.stdout }).on('line', (line) => out.push(line))
  createInterface({ input: child.stderr }).on('line', (line) => {
    stderr += `${line}\n`
    try {
      const record = JSON.parse(line) as { msg?: string; attempt?: number; waitMs?: number }
      if (record.msg === 'rejoining the lease group failed; retrying in a session timeout') warnings.push(record)
    } catch {}
  })
  const said = (line: string, n: number) => out.filter((l) => l === line).length >= n
  const command = (line: string) => child.stdin.write(`${line}\n`)
  const waitFor = (what: string, cond: () => boolean, ms: number) =>
    until(what, cond, ms).catch((err: Error) => {
      throw new Error(`${err.message}; the member said ${JSON.stringify(out)}; its stderr ends: ${stderr.slice(-2000)}`)
    })
  await waitFor('the lone member holds the lease', () => said('held', 1), 60_000)

  await broker.stop()
  command('crash')
  await waitFor('the lease says it no longer holds', () => said('lost', 1), 10_000)
  await waitFor('a rejoin failed while the broker is away', () => warnings.length >= 1, 120_000)
  const wait = warnings[0]!.waitMs!
  t.ok(wait >= 0.8 * SESSION_MS && wait <= SESSION_MS, `the next attempt waits about a session timeout (${wait} ms)`)
  t.equal(warnings[0]!.attempt, 1, 'the warning names the attempt')
  await broker.start()
  await waitFor('the rejoin joined once the broker was back', () => said('settled', 1), 120_000)
  await waitFor('the lone member holds the lease again', () => said('held', 2), 60_000)

  await broker.stop()
  command('crash')
  await waitFor('a rejoin failed again', () => warnings.length >= 2, 120_000)
  const closing = Date.now()
  command('close')
  await waitFor('the lease closed', () => said('closed', 1), 60_000)
  await waitFor('the rejoin ended', () => said('settled', 2), 30_000)
  const took = Date.now() - closing
  t.ok(took < 2_000, `closing ends the rejoin's wait at once, not a session timeout later (${took} ms)`)
  t.equal(warnings.length, 2, 'no attempt after the close')
})
