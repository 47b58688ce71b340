/**
 * Issue 32 with the live venue: two `svc start` instances (SVC_CLUSTER=on, test/fixtures/live-service.ts in child
 * processes) on the shared broker, against one local Hyperliquid stand-in on a clock 120 times the wall clock.
 * - The first feeds the venue (backfill over REST, then the stream); the second is a replica: ready, its data.venue
 *   the log's view (streaming, no websocket of its own).
 * - The feeder SIGKILLed mid-stream: the replica takes the feed over after the session timeout, repairs the span since
 *   the last tick in the log over REST (a `restart` gap episode, as after a restart of one instance), and streams; the
 *   killed instance restarted rejoins as a replica.
 * - After a clean stop, in the ticks topic: every bar and settlement the venue served from the backfill's first to the
 *   end, exactly once with the venue's values; no trade, bar or settlement twice; no connector seq twice.
 */
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { CLUSTER_SIGNING_SECRET } from '../../bench/clusterInstance.ts'
import { tickTime, type Tick } from '../../ingest/Tick.ts'
import { KafkaLog } from '../../pipeline/log/KafkaLog.ts'
import { VENUE_GAPS } from '../../pipeline/records/venueGapRecord.ts'
import { decodeTickValue } from '../../pipeline/TickEnvelope.ts'
import { topicNames } from '../../pipeline/topics.ts'
import { kafkaBrokers, kafkaSkip, readAll } from '../helpers/logs.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { spawnLiveService, type LiveServiceChild as Child } from '../helpers/liveService.ts'
import { compareBars, compareFunding, hourOf, repeatedKeys, until, withLocalVenue } from '../helpers/venue.ts'

const SPEED = 120
const HOUR = 3_600_000
const SESSION_MS = 6_000
const COINS = ['BTC', 'ETH', 'SOL']
/** The fixture stops without svc start's deadline: past a minute the test shows what the child printed. */
const STOP_WITHIN_MS = 60_000

t.setTimeout(900_000)
const skip = kafkaSkip(t)

interface Venue {
  stage: string
  connected: boolean
  event_time: string | null
}

t.test('the live venue on two instances: one feeds, the other takes the feed over when it dies, no tick twice or missing', { skip }, async (t) => {
  const { venue, clock } = await withLocalVenue(t, { speed: SPEED, historyDays: 20 })
  const prefix = `live-${randomBytes(4).toString('hex')}.`
  // One training cut for both (SVC_CLUSTER=on requires it with the live venue): the present when the test starts.
  const trainUntil = new Date(hourOf(clock.now())).toISOString()
  const children: Child[] = []
  const dirs: Partial<Record<'a' | 'b', string>> = {}
  t.teardown(() => {
    for (const c of children) c.process.kill('SIGKILL')
  })
  const start = async (name: 'a' | 'b'): Promise<Child> => {
    const dataDir = dirs[name] ??= await makeTempDir(t, `svc-live-cluster-${name}-`)
    const env = {
      SVC_TRAIN_DAYS: '7',
      SVC_TRAIN_UNTIL: trainUntil,
      SVC_BOOTSTRAP_RELEASE: 'off',
      SVC_LOG: 'kafka',
      KAFKA_BROKERS: kafkaBrokers()!.join(','),
      KAFKA_TOPIC_PREFIX: prefix,
      KAFKA_INSTANCE_ID: name,
      KAFKA_SESSION_TIMEOUT_MS: String(SESSION_MS),
      SVC_CLUSTER: 'on',
      SVC_SIGNING_SECRET: CLUSTER_SIGNING_SECRET,
    }
    const child = spawnLiveService({ dataDir, venue, clock, env })
    children.push(child)
    return child
  }
  const ready = async (child: Child) => {
    await until('the child serves', () => child.url() !== null, 120_000)
    await until('ready', async () => (await fetch(`${child.url()}/readyz`).catch(() => null))?.status === 200, 300_000)
  }
  const venueOf = async (child: Child) => ((await (await fetch(`${child.url()}/healthz`)).json()) as { data: { venue: Venue } }).data.venue

  // 1. a feeds (it backfills and streams), then b joins as a replica.
  const a = await start('a')
  await ready(a)
  t.match(a.out, /backfilling \d+ days of 1h bars/, 'a backfills the history')
  const b = await start('b')
  await ready(b)
  t.match(b.out, /svc: replica: instance a/, 'b is a replica: a feeds the venue')
  t.notMatch(b.out, /backfilling|repairing/, 'b fetches nothing from the venue')
  const replica = await venueOf(b)
  t.match(replica, { stage: 'streaming', connected: false }, 'the replica reports the venue as the log shows it: current, no websocket of its own')
  const streamingFrom = clock.now()
  await until('an hour of streaming, a current', async () => clock.now() > streamingFrom + HOUR && (await venueOf(a)).stage === 'streaming', 120_000)
  t.ok(Date.parse((await venueOf(b)).event_time!) > streamingFrom, 'the replica reads the ticks a streams')

  // 2. a dies mid-stream: b takes the feed over after the session timeout and repairs the span since a's last tick.
  a.process.kill('SIGKILL')
  await a.exited
  const killedAt = clock.now()
  await until('b takes the feed over', () => /this instance now holds the venue feed lease/.test(b.out), 60_000)
  await until('b repairs since the last tick in the log', () => /repairing bars and funding since/.test(b.out), 60_000)
  const resumedAt = Date.parse(/repairing bars and funding since (\S+) over REST/.exec(b.out)![1]!)
  t.ok(resumedAt > streamingFrom && resumedAt <= killedAt, `b resumes after the newest tick a wrote (${new Date(resumedAt).toISOString()}; a killed at ${new Date(killedAt).toISOString()})`)
  await until('b streams', async () => (await venueOf(b)).connected, 120_000)

  // 3. a restarted rejoins as a replica (its transactional id fences its dead transaction, so the log reads on).
  const a2 = await start('a')
  await ready(a2)
  t.match(a2.out, /svc: replica: instance b/, 'the restarted a is a replica: b feeds')
  t.notMatch(a2.out, /backfilling|repairing/, 'the restarted a fetches nothing from the venue')
  await until('two hours past the kill, both current', async () => {
    if (clock.now() < killedAt + 2 * HOUR) return false
    const [va, vb] = [await venueOf(a2), await venueOf(b)]
    return va.stage === 'streaming' && vb.stage === 'streaming' && Date.parse(va.event_time!) > killedAt + HOUR
  }, 180_000)
  t.pass('both current two hours of venue time after the kill')

  // 4. Both stopped cleanly (the replica first: no handover), then the log is read up to the last bar closed before.
  const end = hourOf(clock.now()) - HOUR
  const stopped = async (child: Child, what: string) => {
    child.process.kill('SIGTERM')
    const code = await Promise.race([child.exited, sleep(STOP_WITHIN_MS).then(() => 'still running')])
    t.equal(code, 0, what, code === 0 ? {} : { out: child.out.slice(-4000), err: child.err.slice(-4000) })
  }
  await stopped(a2, 'the replica stops cleanly')
  await stopped(b, 'the feeder stops cleanly')

  const reader = await KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: 'svc-test-live-cluster', topicPrefix: prefix })
  t.teardown(() => reader.close())
  const names = topicNames()
  const envelopes = (await readAll(reader, names.ticks)).map((r) => decodeTickValue(r.value))
  const ticks = envelopes.map((e) => e.tick as Tick)
  const seqs = envelopes.map((e) => e.seq)
  t.equal(new Set(seqs).size, seqs.length, `no connector seq twice (${seqs.length} ticks)`)
  t.same(repeatedKeys(ticks), [], 'no trade, bar or settlement twice')
  const first = Math.min(...ticks.filter((x) => x.kind === 'bar').map((x) => tickTime(x)))
  for (const coin of COINS) {
    t.same(compareBars(ticks, venue, coin, first, end), [], `${coin}: every bar the venue served, once, with its values, across the takeover`)
    t.same(compareFunding(ticks, venue, coin, first, end), [], `${coin}: every settlement once`)
  }
  const gaps = (await readAll(reader, VENUE_GAPS.name)).map((r) => VENUE_GAPS.decode(r.value))
  const takeover = gaps.filter((g) => g.cause === 'restart')
  t.equal(takeover.length, 1, 'the takeover is one recorded restart episode')
  t.ok(takeover.every((g) => g.status === 'repaired' && g.bars_repaired === g.bars_expected), `repaired in full (${takeover.map((g) => `${g.bars_repaired}/${g.bars_expected}`).join(', ')})`)
  const ids = async (topic: string) => (await readAll(reader, topic)).map((r) => (JSON.parse(r.value.toString('utf8')) as { decision_id: string }).decision_id)
  const decisions = await ids(names.decisions)
  t.equal(new Set(decisions).size, decisions.length, `no decision appended twice (${decisions.length})`)
  const outcomes = await ids(names.outcomes)
  t.equal(new Set(outcomes).size, outcomes.length, `no outcome appended twice (${outcomes.length})`)
})
