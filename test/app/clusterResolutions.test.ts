/**
 * Issue 32, acceptance 1, the resolution half: "no decision, grade, XP award or delivery attempt twice; each
 * resolution's hook delivered once per endpoint (a local receiver counts)", with clocks that resolve inside the test.
 *
 * The simulated venue runs its present at 1x and every horizon is an hour or more, so clusterRoutes.test.ts never sees
 * a resolution. Here two, then three `svc start` instances (SVC_CLUSTER=on) on the real broker, behind the balancer,
 * replay a dated synthetic tape (SVC_TAPE, BTC/ETH/SOL, ingest/SyntheticMarket) at SVC_REPLAY_SPEED = SPEED, so S01's
 * one-hour horizon passes in 3600 / SPEED s of wall time. Only the venue-feed lease holder replays; the others read the
 * ticks from the log; a new holder resumes from the log's newest time (app/ServiceApp.ts run()). Each folder holds the
 * operator's S01 release (built once as clusterRoutes builds it, then copied); the tape's first SVC_TRAIN_DAYS = 7
 * days are S01's regime baseline. Who holds what is read from the group coordinator (the `venue-feed` and `delivery`
 * leases, the `payers` partitions) and from /readyz `cluster`.
 *
 * Round 1: the payers (sign-in-with-x, credits granted by the operator route; payer i on payer partition i % 3, so
 * every instance owns some), each with a hook endpoint on the local receiver, buy S01 claims through the balancer, arm
 * a resolution hook on each claim and lock a duel call on it. While those clocks are open one instance is SIGKILLed:
 * - two instances: the one holding the venue feed and the delivery leases; the other takes both over (session timeout)
 *   and the clocks resolve there;
 * - three instances: one that holds neither lease, only payer partitions (some of the payers' calls are its to
 *   write up in the Arena); its partitions move to the others, the leases stay, and it stays down until the clocks
 *   resolved at the others and its payers' calls were written up (call_resolved) by their new owners.
 * The killed one is restarted with its folder and rejoins: a replica (the leases are sticky) owning payer partitions
 * again. Round 2: the same with every instance up; the delivery lease holder (it feeds the venue too) is SIGKILLed
 * mid-dispatch, by the receiver as its first round-2 POST arrives (before the answer, so that attempt is never
 * recorded); a survivor takes the leases over (with three, the feed and the delivery may go to different ones),
 * delivers the rest and makes that attempt again; the killed one restarts and rejoins. Then:
 * - every armed hook and every endpoint got exactly one delivery per resolved decision at the receiver (one delivery
 *   id: product/delivery/Attempts.ts, a retry or a re-made attempt shares it), and nothing else arrived; each POSTed
 *   once, except those in flight at the second kill (sent, never answered), which arrive twice under their id (the
 *   receiver dedupes), and whose attempt is recorded once, by the instance that made it again;
 * - the delivery.attempts journal holds each attempt id once and one delivered row per delivery;
 * - every call graded once: each payer's scoreboard on each instance has every call graded (or void), the same items on
 *   every instance; one correct_call award per correct call and one call_resolved notification per call in the Arena
 *   journals (awaited: a killed owner's rows are written by the next once the broker aborts its open transaction, up
 *   to 60 s), no award (payer, id) twice in arena.experience;
 * - the decisions and outcomes journals hold each decision id once (each bought decision's record, each resolution);
 *   every instance serves the same decision and the same resolution for every bought claim (the same text).
 * Not here: a burst of paid calls in flight at the kill (clusterCreditsScale.test.ts).
 * At the end every instance stops within its stop deadline (the engine's final checkpoint used to commit its
 * positions one admin request per partition and outlast it). About 3 minutes of wall time for two instances and 3.5
 * for three on the shared 2-core machine, broker already up (the file: about 7).
 */
import { createServer } from 'node:http'
import { randomBytes } from 'node:crypto'
import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { leaseHolder, payerOwners, spawnClusterInstance, type ClusterInstance } from '../../bench/clusterInstance.ts'
import { Balancer } from '../../serving/cluster/Balancer.ts'
import { freePort } from '../../bench/freePort.ts'
import { SyntheticMarket } from '../../ingest/SyntheticMarket.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { partitionForKey } from '../../common/murmur2.ts'
import { CreditLedger } from '../../product/billing/CreditLedger.ts'
import { KafkaLog } from '../../pipeline/log/KafkaLog.ts'
import { DEFAULT_PARTITIONS, topicNames } from '../../pipeline/topics.ts'
import { DECISIONS } from '../../pipeline/records/decisionRecord.ts'
import { OUTCOMES_JOURNAL } from '../../pipeline/records/outcomeRecord.ts'
import { EXPERIENCE } from '../../pipeline/records/experienceRecord.ts'
import { DELIVERY_ATTEMPTS } from '../../pipeline/records/deliveryRecord.ts'
import { NOTIFICATIONS } from '../../pipeline/records/notificationRecord.ts'
import { kafkaBrokers, kafkaSkip, readAll, type TapTest as Test } from '../helpers/logs.ts'
import { signIn, type SignedIn } from '../helpers/serving/signIn.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { READY_WITHIN_MS, activateS01Release, call, ready, startAll, type Answer, type Json } from '../helpers/cluster.ts'
import { within } from '../helpers/until.ts'

const SESSION_MS = 6_000
const OPS = `ops-${randomBytes(8).toString('hex')}`
const STALENESS_MS = 10_000
/** Event time per wall time after the warm-up: S01's hour in 30 s. */
const SPEED = 120
const TRAIN_DAYS = 7
/** The tape: the training days, the warm-up past the cut (the longest sold horizon and its grace), then room to play. */
const TAPE_HOURS = TRAIN_DAYS * 24 + 9 + 24
const GRANT = 1_000_000
const ASSETS = ['SOL', 'BTC', 'ETH'] as const
/** Per cluster: its first start, a restart after each round, and ten minutes for the rest; two clusters. */
t.setTimeout(2 * (READY_WITHIN_MS * 3 + 600_000))

const skip = kafkaSkip(t)

interface Received { path: string; id: string; decision: string; status: string }
interface Claim { payer: number; decision_id: string; asset: string; horizon_end: string; round: number }

/** A fresh account whose payer partition (its draws journal partition: PayerOwnership.partitionOf) is `partition`. */
function accountOn(partition: number) {
  for (;;) {
    const account = privateKeyToAccount(generatePrivateKey())
    if (partitionForKey(CreditLedger.payerKey(account.address), DEFAULT_PARTITIONS) === partition) return account
  }
}

/**
 * The tape every cluster of this file replays (each under its own topic prefix): SyntheticMarket's three assets, long
 * enough for the training window, the warm-up past the cut and the rounds below at SPEED.
 */
let tapeWritten: Promise<string> | null = null
const theTape = () => (tapeWritten ??= (async () => {
  const tape = join(await makeTempDir(t, 'svc-res-tape-'), 'synthetic.ndjson.gz')
  const writer = TapeWriter.open(tape, { gzipLevel: 1 })
  await new SyntheticMarket({ seed: 32, hours: TAPE_HOURS, assets: [...ASSETS].sort(), start: '2026-01-05T00:00:00Z' }).writeTo(writer)
  await writer.close()
  return tape
})())
/**
 * The operator's S01 release (activateS01Release says why), built once: every instance's folder starts as a copy of
 * this one, as an operator activates one release on each (the build is a third of a cluster's set-up on this machine).
 */
let releaseBuilt: Promise<string> | null = null
const theRelease = () => (releaseBuilt ??= (async () => {
  const dir = await makeTempDir(t, 'svc-res-release-')
  await activateS01Release(dir)
  return dir
})())

/**
 * One cluster of `names` through both rounds and the checks. Round 1 SIGKILLs the holder of the venue-feed and
 * delivery leases (`firstKill: 'holder'`) or an instance that holds neither and owns payer partitions (`'bystander'`);
 * round 2 the delivery holder mid-dispatch. Payer i's partition is i % DEFAULT_PARTITIONS, so every partition has
 * payers whose calls, awards and notifications its owner writes.
 */
const resolutions = (names: readonly string[], o: { payers: number; firstKill: 'holder' | 'bystander' }) => async (t: Test) => {
  const t0 = Date.now()
  const secs = () => `${Math.round((Date.now() - t0) / 1000)} s`
  const prefix = `cres${randomBytes(4).toString('hex')}.`
  const all = names.length === 2 ? 'both' : `all ${names.length}`
  const [tape, release] = await Promise.all([theTape(), theRelease()])

  const ports: Record<string, number> = {}
  for (const name of names) ports[name] = await freePort()
  const balancer = await Balancer.start({ port: 0, host: '127.0.0.1', upstreams: names.map((n) => ({ host: '127.0.0.1', port: ports[n]! })), probeEveryMs: 200 })
  t.teardown(() => balancer.close())
  const bal = `http://127.0.0.1:${balancer.port}`
  const inRotation = () => within(`${all} instances in the balancer's rotation`, 10_000, async () => balancer.upstreams.every((u) => u.inService))

  // The receiver: every POST, by path, delivery id and the decision its body names; always 200.
  const received: Received[] = []
  /** Called (once) as the next POST arrives, before it is read or answered. */
  let onNextPost: ((deliveryId: string) => void) | null = null
  /** Every POST as it arrives (before its body is read), with the wall time. */
  const arrivals: Array<{ id: string; at: number }> = []
  const receiver = createServer((req, res) => {
    arrivals.push({ id: String(req.headers['x-svc-delivery-id'] ?? ''), at: Date.now() })
    const first = onNextPost
    onNextPost = null
    first?.(String(req.headers['x-svc-delivery-id'] ?? ''))
    let body = ''
    req.on('data', (d: Buffer) => (body += d.toString()))
    req.on('end', () => {
      let parsed: Json = {}
      try {
        parsed = JSON.parse(body)
      } catch {
        // counted with an empty decision: it can match no expectation
      }
      received.push({ path: req.url ?? '', id: String(req.headers['x-svc-delivery-id'] ?? ''), decision: String(parsed.decision_id ?? ''), status: String(parsed.status ?? '') })
      res.end('ok')
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()))
  t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())))
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`

  // The operator's S01 release in each folder before its start.
  const dirs: Record<string, string> = {}
  for (const name of names) dirs[name] = await makeTempDir(t, `svc-res-${name}-`)
  await Promise.all(Object.values(dirs).map((dataDir) => cp(release, dataDir, { recursive: true })))
  t.pass(`tape written and releases active ${secs()} in`)

  const live: Record<string, ClusterInstance> = {}
  const url: Record<string, string> = {}
  const start = async (name: string) => {
    const env = {
      KAFKA_SESSION_TIMEOUT_MS: String(SESSION_MS), SVC_OPS_TOKEN: OPS, PORT: String(ports[name]), SVC_BASE_URL: bal,
      SVC_TAPE: tape, SVC_REPLAY_SPEED: String(SPEED), SVC_TRAIN_DAYS: String(TRAIN_DAYS),
      // TEST ONLY: the URL guard lets the local receiver through (and nothing else private).
      SVC_DELIVERY_ALLOW: '127.0.0.1/32',
    }
    const i = spawnClusterInstance({ name, dataDir: dirs[name]!, prefix, brokers: kafkaBrokers()!.join(','), env })
    // Registered after its data dir's removal: tap runs teardowns last-in first-out, so it has exited before that.
    t.teardown(i.stop)
    live[name] = i
    url[name] = await i.url
    return i
  }
  await startAll(names, start)
  await inRotation()
  t.pass(`${all} instances ready ${secs()} in`)

  const reader = await KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: 'svc-test-cluster-resolutions', topicPrefix: prefix })
  t.teardown(() => reader.close())
  const readyz = async (name: string) => (await call(url[name]!, 'GET', '/readyz')).body.data
  const virtualNow = async (name: string) => Date.parse((await readyz(name)).data_time.event_time)
  const feeder = async () => {
    for (const name of Object.keys(live)) if ((await readyz(name).catch(() => null))?.cluster?.venue_feed_here) return name
    return null
  }
  const payerOwnersNow = () => payerOwners(reader, prefix)
  /** Waits until every payer partition is owned and every instance up owns one, as at a start and after a rejoin. */
  const spread = async (what: string) => {
    let owners: Array<string | null> = []
    await within(what, 120_000, async () => {
      owners = await payerOwnersNow()
      return owners.every((x) => x !== null) && new Set(owners).size === names.length
    })
    return owners
  }
  t.pass(`payer partitions owned: ${(await spread(`the payers lease spread over ${all} instances`)).join(', ')}`)

  // ---- payers, each with a hook endpoint on the receiver ---------------------------------------------------------
  const payers: SignedIn[] = []
  for (let i = 0; i < o.payers; i++) {
    const me = await signIn(bal, accountOn(i % DEFAULT_PARTITIONS))
    const grant = await call(bal, 'POST', '/v1/billing/grants', { body: { action: 'grant', payer: me.address, credits: GRANT, ref: `res-${i}` }, headers: { 'x-svc-ops': OPS } })
    t.equal(grant.status, 200, `payer ${i} granted through the balancer`)
    const ep = await call(bal, 'POST', '/v1/hook-endpoints', { body: { url: `${receiverUrl}/endpoint/${i}` }, headers: me.headers })
    t.equal(ep.status, 201, `payer ${i}'s hook endpoint registered`)
    payers.push(me)
  }

  const claims: Claim[] = []
  /** Who asked each decision first (the payer whose endpoints its resolution goes to: DeliveryBook.asks). */
  const firstAsker = new Map<string, number>()
  const hooks: Array<{ payer: number; decision_id: string; path: string }> = []
  const lockedCalls: Array<{ payer: number; decision_id: string }> = []
  /**
   * Each payer buys S01 (assets in turn, from a different one per payer, until a claim), arms a resolution hook on the
   * claim and locks a call on its clock, all through the balancer; every request is answered 200/201.
   */
  const round = async (n: number) => {
    let refusals = 0
    for (let i = 0; i < o.payers; i++) {
      const me = payers[i]!
      let claim: Json = null
      for (let k = 0; k < ASSETS.length * 2 && claim === null; k++) {
        const asset = ASSETS[(i + k) % ASSETS.length]!
        let bought!: Answer
        await within(`payer ${i} buys S01 on ${asset}`, STALENESS_MS, async () => (bought = await call(bal, 'POST', '/v1/decisions', { body: { asset, question_id: 'S01_market_regime' }, headers: me.headers })).status === 200)
        const d = bought.body.data
        if (!firstAsker.has(d.decision_id)) firstAsker.set(d.decision_id, i)
        if (d.action === 'refuse') refusals++
        else claim = d
      }
      if (claim === null) {
        t.fail(`round ${n}: payer ${i} got no S01 claim on any asset (${refusals} refusals so far)`)
        continue
      }
      claims.push({ payer: i, decision_id: claim.decision_id, asset: claim.asset, horizon_end: claim.horizon_end, round: n })
      const path = `/hook/${n}/${i}`
      const hook = await call(bal, 'POST', '/v1/hooks', { body: { decision_id: claim.decision_id, url: `${receiverUrl}${path}` }, headers: me.headers })
      t.equal(hook.status, 201, `round ${n}: payer ${i}'s hook armed on ${claim.asset} ${claim.decision_id.slice(0, 8)} (horizon ${claim.horizon_end})`)
      if (hook.status === 201) hooks.push({ payer: i, decision_id: claim.decision_id, path })
      const locked = await call(bal, 'POST', '/v1/calls', { body: { decision_id: claim.decision_id, call: i % 2 === 0 ? 'obtains' : 'not' }, headers: me.headers })
      t.equal(locked.status, 201, `round ${n}: payer ${i}'s call locked`)
      if (locked.status === 201) lockedCalls.push({ payer: i, decision_id: claim.decision_id })
    }
    const mine = claims.filter((c) => c.round === n)
    t.comment(`round ${n}: ${mine.length} claims (${new Set(mine.map((c) => c.decision_id)).size} decisions), ${refusals} refusals, ${secs()} in`)
    return mine
  }
  const resolution = (base: string, id: string) => call(base, 'GET', `/v1/resolutions/${id}`)
  const resolvedOn = async (at: readonly string[], ids: string[]) => {
    for (const id of ids) {
      for (const name of at) {
        const r = await resolution(url[name]!, id)
        if (r.status !== 200 || r.body.data.status === 'pending') return false
      }
    }
    return true
  }

  const leases = async () => ({ feed: await feeder(), delivery: await leaseHolder(reader, prefix, 'delivery') })
  const holders = async () => {
    const held = await leases()
    t.equal(held.delivery, held.feed, `instance ${held.feed} feeds the venue and holds the delivery lease`)
    return held
  }
  /**
   * SIGKILLs `victim` (unless it is dead already), waits until the others hold what it held (`before`: the venue feed
   * and delivery leases as they were before it died; its payer partitions), runs `whileDown`, restarts it with its
   * folder and waits until it is ready again and has rejoined: as a replica (the leases are sticky), owning payer
   * partitions again.
   */
  const killAndRestart = async (victim: string, before: { feed: string | null; delivery: string | null }, whileDown?: (survivors: string[]) => Promise<void>) => {
    const survivors = names.filter((n) => n !== victim)
    const dead = live[victim]!
    dead.child.kill('SIGKILL') // nothing if it is already dead
    await dead.exited
    const killedAt = Date.now()
    t.pass(`${victim} SIGKILLed ${secs()} in`)
    let feed: string | null = null
    let delivery: string | null = null
    const tookFeed = await within('a survivor feeds the venue', 120_000, async () => survivors.includes((feed = await feeder()) ?? ''))
    const tookDelivery = await within('a survivor holds the delivery lease', 120_000, async () => survivors.includes((delivery = await leaseHolder(reader, prefix, 'delivery')) ?? ''))
    let owners: Array<string | null> = []
    const tookPayers = await within(`the survivors own ${victim}'s payer partitions`, 120_000, async () => (owners = await payerOwnersNow()).every((x) => x !== null && x !== victim))
    if (before.feed === victim || before.delivery === victim) t.pass(`${feed} took the venue feed over ${tookFeed} ms and ${delivery} held the delivery lease ${tookFeed + tookDelivery} ms after the kill`)
    else t.same({ feed, delivery }, before, `${victim} held neither lease: ${feed} still feeds the venue, ${delivery} still holds the delivery lease`)
    t.pass(`payer partitions owned ${tookFeed + tookDelivery + tookPayers} ms after the kill: ${owners.join(', ')}`)
    await whileDown?.(survivors)
    await start(victim)
    await within(`${victim} ready again`, READY_WITHIN_MS, () => ready(url[victim]!))
    t.pass(`${victim} restarted and ready ${Math.round((Date.now() - killedAt) / 1000)} s after the kill`)
    t.equal((await readyz(victim)).cluster.venue_feed_here, false, `${victim} rejoined as a replica (the feed lease is sticky)`)
    t.pass(`payer partitions owned after the rejoin: ${(await spread(`${victim} rejoined the payers lease`)).join(', ')}`)
    await inRotation()
  }
  /** Payers whose partition `name` owns. */
  const ownedBy = async (name: string) => {
    const owners = await payerOwnersNow()
    return payers.flatMap((me, i) => (owners[partitionForKey(CreditLedger.payerKey(me.address), DEFAULT_PARTITIONS)] === name ? [i] : []))
  }

  // ---- round 1: an instance SIGKILLed while its clocks are open; they resolve at the feed holder -------------------
  // The holder of both leases (the feed holder takes over), or one that holds neither (only its payer partitions move:
  // the Arena rows of its payers' calls are the next owner's to write).
  const held1 = await holders()
  const holder1 = held1.feed!
  const victim1 = o.firstKill === 'holder' ? holder1 : names.find((n) => n !== holder1)!
  const first = await round(1)
  t.ok(first.length > 0, 'round 1 bought claims')
  const victimPayers = await ownedBy(victim1)
  t.ok(victimPayers.length > 0 && first.some((c) => victimPayers.includes(c.payer)), `${victim1} owns payers with round-1 calls: ${victimPayers.join(', ')}`)
  const nowAtKill = await virtualNow(holder1)
  t.ok(first.every((c) => Date.parse(c.horizon_end) > nowAtKill), `every round-1 clock open when ${victim1} is killed (virtual now ${new Date(nowAtKill).toISOString()})`)
  // One that holds neither lease stays down until the clocks resolved at the others and its payers' calls are written
  // up in the Arena (call_resolved) by their new owners, so all of that happens without it.
  const downUntilResolved = async (survivors: string[]) => {
    const took = await within(`the round-1 clocks resolved on ${survivors.join(', ')}`, 240_000, () => resolvedOn(survivors, first.map((c) => c.decision_id)))
    const theirs = new Set(victimPayers.map((i) => payers[i]!.address.toLowerCase()))
    const calls = lockedCalls.filter((c) => victimPayers.includes(c.payer)).length
    const notified = async () => (await readAll(reader, NOTIFICATIONS.name)).map((r) => NOTIFICATIONS.decode(r.value)).filter((n) => n.kind === 'call_resolved' && theirs.has(n.payer.toLowerCase())).length
    const wrote = await within(`${victim1}'s payers' calls notified by their new owners`, 120_000, async () => (await notified()) >= calls)
    t.pass(`with ${victim1} down, the round-1 clocks resolved at ${survivors.join(', ')} (${took} ms) and its payers' round-1 calls (${calls}) were notified (${wrote} ms later)`)
  }
  await killAndRestart(victim1, held1, o.firstKill === 'bystander' ? downUntilResolved : undefined)
  await within(`the round-1 clocks resolved on ${all} instances`, 240_000, () => resolvedOn(names, first.map((c) => c.decision_id)))
  t.pass(`round 1 resolved on ${all} ${secs()} in`)
  const afterRound1 = received.length

  // ---- round 2: the new holder SIGKILLed while its first round-2 POST is in flight (mid-dispatch) ------------------
  // The receiver kills it as that POST arrives, before answering: the attempt is never recorded, so the next holder
  // makes it again under the same delivery id, and whatever else it had in flight or not yet planned.
  const held2 = await holders()
  const victim2 = held2.delivery!
  const second = await round(2)
  t.ok(second.length > 0, 'round 2 bought claims')
  let inFlight = ''
  onNextPost = (id) => {
    inFlight = id
    live[victim2]!.child.kill('SIGKILL')
  }
  await within(`${victim2} SIGKILLed as its first round-2 POST arrives`, 240_000, () => live[victim2]!.child.signalCode !== null)
  await live[victim2]!.exited
  const diedAt = Date.now()
  await new Promise((r) => setTimeout(r, 500))
  t.comment(`${received.length - afterRound1} round-2 POSTs read to their end at the receiver when ${victim2} died`)
  await killAndRestart(victim2, held2)
  await within(`the round-2 clocks resolved on ${all} instances`, 240_000, () => resolvedOn(names, second.map((c) => c.decision_id)))
  t.pass(`round 2 resolved on ${all} ${secs()} in`)

  // ---- what the receiver got -------------------------------------------------------------------------------------
  const decisions = [...new Set(claims.map((c) => c.decision_id))]
  const outcomeOf = new Map<string, Json>()
  for (const id of decisions) outcomeOf.set(id, (await resolution(url.a!, id)).body.data)
  const expected = new Set<string>()
  for (const h of hooks) expected.add(`${h.path} ${h.decision_id}`)
  // Endpoints: every resolved decision a payer asked first (refusals never resolve).
  for (const [id, i] of firstAsker) if (outcomeOf.has(id)) expected.add(`/endpoint/${i} ${id}`)
  await within('every expected delivery at the receiver', 120_000, async () => [...expected].every((k) => received.some((r) => `${r.path} ${r.decision}` === k)))
  // Room for a second delivery of anything to arrive (a retry is 2 s away; a re-planned delivery at a takeover sooner).
  await new Promise((r) => setTimeout(r, 5_000))
  const byTarget = new Map<string, Set<string>>()
  const posts = new Map<string, number>()
  for (const r of received) {
    const k = `${r.path} ${r.decision}`
    byTarget.set(k, (byTarget.get(k) ?? new Set()).add(r.id))
    posts.set(r.id, (posts.get(r.id) ?? 0) + 1)
  }
  t.same([...byTarget.keys()].filter((k) => !expected.has(k)), [], 'nothing reached the receiver that was not expected')
  t.same([...expected].filter((k) => (byTarget.get(k)?.size ?? 0) !== 1), [], `each of the ${expected.size} expected deliveries (${hooks.length} hooks, ${expected.size - hooks.length} endpoint deliveries) has exactly one delivery id`)
  // Round 1's victim died with nothing to deliver: each of its deliveries POSTed once. Round 2's died mid-dispatch: a
  // POST it made whose attempt row it never committed may be POSTed again by the new holder under the same delivery
  // id (product/delivery/Attempts.ts: the receiver dedupes on it), never a third time.
  const round1Ids = new Set(received.slice(0, afterRound1).map((r) => r.id))
  t.same([...posts].filter(([id, n]) => round1Ids.has(id) && n !== 1).map(([id, n]) => `${id}×${n}`), [], `round 1: each delivery id POSTed once (${afterRound1} POSTs)`)
  const resent = [...posts].filter(([id, n]) => !round1Ids.has(id) && n > 1)
  t.ok(resent.every(([, n]) => n === 2), `round 2: each delivery id POSTed once, or twice across the kill (${received.length - afterRound1} POSTs, ${resent.length} re-sent under their delivery id)`)
  t.ok(received.every((r) => r.status === 'resolved'), 'every body is a resolution record')
  // In flight at the kill: the POST that triggered it and any other the holder had sent at once (its attempts run
  // concurrently), all arrived before it died and none answered to it.
  const inFlightAtKill = new Set(arrivals.filter((a) => a.at <= diedAt && !round1Ids.has(a.id)).map((a) => a.id))
  t.same(resent.map(([id]) => id).filter((id) => !inFlightAtKill.has(id)), [], `the only deliveries POSTed twice were in flight at the kill (${inFlightAtKill.size} arrived before ${victim2} died)`)

  // The delivery record: one row per attempt, one delivered row per delivery.
  const attempts = (await readAll(reader, DELIVERY_ATTEMPTS.name)).map((r) => DELIVERY_ATTEMPTS.decode(r.value))
  const attemptIds = attempts.map((a) => a.id)
  t.same(attemptIds.filter((id, i) => attemptIds.indexOf(id) !== i), [], `no delivery attempt twice in delivery.attempts (${attempts.length} rows)`)
  const deliveredRows = attempts.filter((a) => a.status === 'delivered').map((a) => a.delivery_id)
  t.same(deliveredRows.filter((id, i) => deliveredRows.indexOf(id) !== i), [], 'no delivery delivered twice in the record')
  t.same([...posts.keys()].filter((id) => !deliveredRows.includes(id)), [], 'every delivery the receiver got is recorded delivered')
  t.equal(attempts.filter((a) => a.delivery_id === inFlight).length, 1, `the POST in flight at the kill (${inFlight}) is recorded once, by the holder that made it again`)

  // ---- the duel and the Arena ------------------------------------------------------------------------------------
  const boards: Record<string, Json[]> = Object.fromEntries(names.map((n) => [n, []]))
  for (const [i, me] of payers.entries()) {
    const mine = lockedCalls.filter((c) => c.payer === i).length
    for (const name of names) {
      let board!: Answer
      await within(`payer ${i}'s calls graded on ${name}`, STALENESS_MS, async () => {
        board = await call(url[name]!, 'GET', `/v1/calls?payer=${me.address}`, { headers: me.headers })
        return board.body.data.calls === mine && board.body.data.open === 0
      })
      boards[name]!.push(board.body.data)
    }
  }
  for (const name of names.slice(1)) t.same(boards[name], boards.a, `every payer's scoreboard is the same on ${name} as on a`)
  t.equal(boards.a!.reduce((s, b) => s + b.graded + b.void, 0), lockedCalls.length, `every one of the ${lockedCalls.length} calls graded (or void) once: ${boards.a!.reduce((s, b) => s + b.graded, 0)} graded, ${boards.a!.reduce((s, b) => s + b.void, 0)} void, ${boards.a!.reduce((s, b) => s + b.correct, 0)} correct`)
  const items: Json[] = []
  for (const me of payers) {
    const page = await call(url.a!, 'GET', `/v1/calls?payer=${me.address}`, { headers: me.headers })
    items.push(...page.body.data.recent)
  }
  const correctCalls = [...new Set(items.filter((c) => c.correct === true).map((c) => c.call_id as string))].sort()
  const callIds = items.map((c) => c.call_id as string)
  // The Arena's rows of a payer whose owner was killed are written by the next owner once it has read the journals to
  // their ends, which waits until the broker aborts the killed writer's open transaction (up to 60 s): so awaited.
  let experience: Array<ReturnType<typeof EXPERIENCE.decode>> = []
  let notes: Array<ReturnType<typeof NOTIFICATIONS.decode>> = []
  const arenaSettled = await within('every correct call awarded and every call notified in the Arena journals', 120_000, async () => {
    experience = (await readAll(reader, EXPERIENCE.name)).map((r) => EXPERIENCE.decode(r.value))
    notes = (await readAll(reader, NOTIFICATIONS.name)).map((r) => NOTIFICATIONS.decode(r.value)).filter((n) => n.kind === 'call_resolved')
    const awarded = new Set(experience.filter((x) => x.kind === 'correct_call').map((x) => x.ref))
    return correctCalls.every((id) => awarded.has(id)) && callIds.every((id) => notes.some((n) => n.ref === id))
  }).catch((err: Error) => {
    t.fail(`${err.message}: calls without a call_resolved notification ${callIds.filter((id) => !notes.some((n) => n.ref === id)).join(', ') || 'none'}`)
    return -1
  })
  t.comment(`the Arena journals had every award and notification ${arenaSettled} ms after the scoreboards showed the grades`)
  const awardIds = experience.map((x) => `${x.payer} ${x.id}`)
  t.same(awardIds.filter((id, i) => awardIds.indexOf(id) !== i), [], `no XP award twice in arena.experience (${experience.length} awards)`)
  t.same(experience.filter((x) => x.kind === 'correct_call').map((x) => x.ref).sort(), correctCalls, `one correct_call award per correct call (${correctCalls.length}), none for another`)
  t.same(notes.map((n) => n.ref).sort(), [...callIds].sort(), `one call_resolved notification per call (${notes.length})`)
  t.equal(new Set(notes.map((n) => n.key)).size, notes.length, 'none twice')

  // ---- the ledger: each decision and each resolution once, the same on every instance -----------------------------
  const recorded = (await readAll(reader, topicNames().decisions)).map((r) => DECISIONS.decode(r.value).decision_id)
  const twice = recorded.filter((id, i) => recorded.indexOf(id) !== i)
  t.same(twice, [], `no decision twice in the decisions journal (${recorded.length} records)`)
  t.ok(decisions.every((id) => recorded.includes(id)), 'every bought decision recorded')
  const resolved = (await readAll(reader, topicNames().outcomes)).map((r) => OUTCOMES_JOURNAL.decode(r.value).decision_id)
  t.same(resolved.filter((id, i) => resolved.indexOf(id) !== i), [], `no decision resolved twice in the outcomes journal (${resolved.length} resolutions)`)
  t.ok(decisions.every((id) => resolved.includes(id)), 'every bought claim resolved in the journal')
  // Compared as the text each serves, not only as canonical JSON: the instance that wrote a decision holds it as built
  // and a replica as decoded from the log, and both must serve one text (the S01 distribution's classes were once in
  // the model's order at the writer and sorted at a replica).
  const differ: string[] = []
  for (const id of decisions) {
    for (const route of [`/v1/resolutions/${id}`, `/v1/decisions/${id}`]) {
      const served = await Promise.all(names.map((n) => call(url[n]!, 'GET', route)))
      if (served.some((r) => r.status !== 200 || JSON.stringify(r.body.data) !== JSON.stringify(served[0]!.body.data))) differ.push(`${route} ${served.map((r) => r.status).join(' ')}`)
    }
  }
  t.same(differ, [], `${all} instances serve the same decision and resolution for each of the ${decisions.length} bought claims (outcomes ${[...outcomeOf.values()].map((o) => o.outcome).join(', ')})`)
  t.pass(`wall time ${secs()}`)
  // Stopped at once (the teardowns would stop them one after the other).
  const stopping = Date.now()
  await Promise.all(Object.values(live).map((i) => i.stop()))
  const deadline = Object.values(live).map((i) => /svc: stop deadline .*$/m.exec(i.out())?.[0]).filter(Boolean)
  t.same(deadline, [], `${all} stopped within the stop deadline (${Date.now() - stopping} ms)`)
}

t.test('clocks resolve inside a two-instance cluster whose feed and delivery holder is SIGKILLed twice: each hook, grade and award once', { skip }, resolutions(['a', 'b'], { payers: 4, firstKill: 'holder' }))
t.test('clocks resolve inside a three-instance cluster, one holding neither lease SIGKILLed, then the delivery holder mid-dispatch: each hook, grade and award once', { skip }, resolutions(['a', 'b', 'c'], { payers: 3, firstKill: 'bystander' }))
