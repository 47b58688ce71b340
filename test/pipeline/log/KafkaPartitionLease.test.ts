/**
 * Partition leases on a real broker (pipeline/log/KafkaPartitionLease.ts): every partition held by exactly one member,
 * the shares even, every member naming the same holder of each partition; a joining member takes only what evens the
 * shares (the others keep the rest: sticky); a leaving member's partitions move to the others at once. A
 * SolePartitionLease (the embedded log) holds every partition.
 */
import t from 'tap'
import { AssignerProtocol } from 'kafkajs'
import { KafkaLog } from '../../../pipeline/log/KafkaLog.ts'
import { KafkaPartitionLease, stickyBalancedAssignment } from '../../../pipeline/log/KafkaPartitionLease.ts'
import { SolePartitionLease, openPartitionLease } from '../../../pipeline/log/PartitionLease.ts'
import { kafkaBrokers, kafkaSkip, makeEmbeddedFactory, type TapTest } from '../../helpers/logs.ts'
import { until } from '../../helpers/until.ts'

const skip = kafkaSkip(t)
const SESSION_MS = 6_000
const P = 6
const prefixOf = () => `t${Math.random().toString(16).slice(2, 12)}.`

async function member(t: TapTest, prefix: string, instance: string): Promise<{ instance: string; log: KafkaLog; lease: KafkaPartitionLease }> {
  const log = await KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: `svc-test-${instance}`, topicPrefix: prefix, instanceId: instance, sessionTimeoutMs: SESSION_MS })
  const lease = await KafkaPartitionLease.open(log, 'payers', { instance, url: `http://127.0.0.1/${instance}` }, { topic: 'cluster.payers', partitions: P })
  t.teardown(async () => {
    await lease.close()
    await log.close()
  })
  return { instance, log, lease }
}

type Member = Awaited<ReturnType<typeof member>>

/** Each partition's holders by what each member says it holds. */
const holdersOf = (members: readonly Member[]) => Array.from({ length: P }, (_, p) => members.filter((m) => m.lease.holds(p)).map((m) => m.instance))
const settled = (members: readonly Member[]) => holdersOf(members).every((h) => h.length === 1)

t.test('the assignment keeps partitions with their holders within even shares, and gives the rest to the members below theirs', async (t) => {
  const meta = (instance: string, holds: number[]) => AssignerProtocol.MemberMetadata.encode({ version: 0, topics: ['x'], userData: Buffer.from(JSON.stringify({ instance, url: null, holds })) })
  const of = (out: ReturnType<typeof stickyBalancedAssignment>) =>
    Object.fromEntries(out.map((a) => [a.memberId, AssignerProtocol.MemberAssignment.decode(a.memberAssignment)?.assignment['x'] ?? []]))
  t.same(of(stickyBalancedAssignment('x', 4, [{ memberId: 'b', memberMetadata: meta('b', []) }, { memberId: 'a', memberMetadata: meta('a', []) }])), { a: [0, 1], b: [2, 3] }, 'nobody holds: even shares in member id order')
  t.same(of(stickyBalancedAssignment('x', 4, [{ memberId: 'a', memberMetadata: meta('a', [0, 1]) }, { memberId: 'b', memberMetadata: meta('b', [2, 3]) }, { memberId: '0', memberMetadata: meta('0', []) }])), { '0': [3], a: [0, 1], b: [2] }, 'a newcomer takes one partition from a member above its share; the rest stay')
  t.same(of(stickyBalancedAssignment('x', 4, [{ memberId: 'b', memberMetadata: meta('b', [2, 3]) }])), { b: [0, 1, 2, 3] }, 'alone: everything, its own kept')
  t.same(of(stickyBalancedAssignment('x', 2, [{ memberId: 'b', memberMetadata: meta('b', [0]) }, { memberId: 'a', memberMetadata: meta('a', [0, 1]) }])), { a: [0], b: [1] }, 'a partition two claim (a healed split) goes to the lowest id; shares stay even')
  t.same(of(stickyBalancedAssignment('x', 2, [{ memberId: 'a', memberMetadata: Buffer.alloc(0) }, { memberId: 'b', memberMetadata: meta('b', [0, 1]) }])), { a: [1], b: [0] }, 'unreadable metadata holds nothing; b keeps its share (its lowest)')
})

t.test('a SolePartitionLease (the embedded log, or one instance) holds every partition and names this instance', async (t) => {
  const { makeLog } = await makeEmbeddedFactory(t)
  const lease = await openPartitionLease(await makeLog(), 'payers', { instance: 'this', url: null }, { topic: 'cluster.payers', partitions: 3, clustered: true })
  t.ok(lease instanceof SolePartitionLease)
  t.same([...lease.held], [0, 1, 2])
  t.same(lease.owner(2), { instance: 'this', url: null })
})

t.test('each partition held by exactly one member; shares even; sticky when one joins; a leaver\'s partitions move at once', { skip }, async (t) => {
  const prefix = prefixOf()
  const members = [await member(t, prefix, 'a'), await member(t, prefix, 'b')]
  await until('two members, each partition held once', () => settled(members), 30_000)
  for (const m of members) t.equal(m.lease.held.size, P / 2, `${m.instance} holds its even share`)
  await until('every member names the holders', async () => {
    for (const m of members) await m.lease.refresh()
    return members.every((m) => Array.from({ length: P }, (_, p) => m.lease.owner(p)?.instance).join() === holdersOf(members).map((h) => h[0]).join())
  }, 30_000)
  t.same(members[0]!.lease.owner(0)!.url, `http://127.0.0.1/${holdersOf(members)[0]![0]}`, 'with its URL')

  const before = holdersOf(members).map((h) => h[0])
  members.push(await member(t, prefix, '0-newcomer'))
  await until('three members, each partition held once, shares even', () => settled(members) && members.every((m) => m.lease.held.size === P / 3), 30_000)
  const after = holdersOf(members).map((h) => h[0])
  const moved = after.filter((h, p) => h !== before[p])
  t.equal(moved.length, P / 3, `only the newcomer's share moved (${moved.length} of ${P})`)
  t.ok(moved.every((h) => h === '0-newcomer'), 'and only to the newcomer')

  const leaver = members.find((m) => m.instance === 'a')!
  const itsPartitions = [...leaver.lease.held]
  const left = Date.now()
  await leaver.lease.close()
  const rest = members.filter((m) => m !== leaver)
  await until('the rest hold every partition once', () => settled(rest), 30_000)
  t.ok(Date.now() - left < SESSION_MS, `the leaver's partitions moved without waiting for the session timeout (${Date.now() - left} ms)`)
  t.ok(itsPartitions.every((p) => rest.some((m) => m.lease.holds(p))), 'its partitions are held by the others')
  t.same(rest.map((m) => m.lease.held.size), [P / 2, P / 2], 'shares even again')
  const kept = holdersOf(rest).map((h) => h[0])
  t.ok(after.every((h, p) => h === 'a' || kept[p] === h), 'the others kept what they held')
})
