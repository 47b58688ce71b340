/**
 * Issue 32, credits across instances (SVC_CLUSTER=on): two `svc start` processes on the shared broker, payers signed in
 * with real viem signatures over real HTTP.
 * - Both name the balancer in front of them as their base URL; a sign-in at the instance that does not own the payer is
 *   forwarded to the owner, so a call right after it finds the session (read-your-writes).
 * - Exactly one instance owns each payer (the `payers` partition lease over the draws partitions, every partition
 *   held once); the other forwards the payer's requests to it with a peer token, and a wrong token is refused.
 * - A balance covering exactly K paid calls, 2K calls sent concurrently, half to each instance: exactly K answered,
 *   the rest challenged (one owner serializes the payer's holds: no overspend, no double debit).
 * - Both instances then report the same balance from their own replica (read with a valid peer token, so not
 *   forwarded), grants − debits, within the follower's staleness bound, and the draws journal agrees: one debit per
 *   answer, each with its answer receipt.
 * - The owner of a payer SIGKILLed mid-burst: calls meanwhile get the typed 503 (PAYER_OWNER_UNREACHABLE), the
 *   survivor takes the partitions after the session timeout, catches up and serves the payer; every debit has its
 *   answer or its reversal and the balance is exactly grants − debits + reversals.
 */
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { CLUSTER_SIGNING_SECRET, payerOwners, spawnClusterInstance, type ClusterInstance } from '../../bench/clusterInstance.ts'
import { PeerForwarder } from '../../serving/cluster/PeerForwarder.ts'
import { Balancer } from '../../serving/cluster/Balancer.ts'
import { freePort } from '../../bench/freePort.ts'
import { partitionForKey } from '../../common/murmur2.ts'
import { KafkaLog } from '../../pipeline/log/KafkaLog.ts'
import { topicNames } from '../../pipeline/topics.ts'
import { kafkaBrokers, kafkaSkip, readAll } from '../helpers/logs.ts'
import { fetchChallenge, signChallenge, type SignedIn } from '../helpers/serving/signIn.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { READY_WITHIN_MS, startPair } from '../helpers/cluster.ts'
import { within } from '../helpers/until.ts'

const SESSION_MS = 6_000
const OPS = `ops-${randomBytes(8).toString('hex')}`
/** The follower's fetch wait (500 ms on Kafka) with room for a loaded machine. */
const STALENESS_MS = 5_000
const K = 6
t.setTimeout(READY_WITHIN_MS * 2 + 300_000)

const skip = kafkaSkip(t)


t.test('two instances: one owner per payer, the other forwards; no overspend; both report grants − debits', { skip }, async (t) => {
  const prefix = `cc${randomBytes(4).toString('hex')}.`
  // One public URL in front of both (the balancer), which both name as their base URL: a sign-in signed for it
  // verifies on either instance.
  const ports: Record<string, number> = { a: await freePort(), b: await freePort() }
  const balancer = await Balancer.start({ port: 0, host: '127.0.0.1', upstreams: [{ host: '127.0.0.1', port: ports.a! }, { host: '127.0.0.1', port: ports.b! }], probeEveryMs: 200 })
  t.teardown(() => balancer.close())
  const publicUrl = `http://127.0.0.1:${balancer.port}`
  const start = async (name: string) => {
    const env = { KAFKA_SESSION_TIMEOUT_MS: String(SESSION_MS), SVC_OPS_TOKEN: OPS, PORT: String(ports[name]), SVC_BASE_URL: publicUrl }
    const i = spawnClusterInstance({ name, dataDir: await makeTempDir(t, `svc-credits-${name}-`), prefix, brokers: kafkaBrokers()!.join(','), env })
    // Registered after its data dir's removal: tap runs teardowns last-in first-out, so it has exited before that.
    t.teardown(i.stop)
    return i
  }
  const { a, urlA, urlB } = await startPair(start)
  const url = { a: urlA, b: urlB } as Record<string, string>

  const reader = await KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: 'svc-test-cluster-credits', topicPrefix: prefix })
  t.teardown(() => reader.close())
  let owners: Array<string | null> = []
  await within('every payer partition held once, by both instances between them', 60_000, async () => {
    owners = await payerOwners(reader, prefix)
    return owners.every((o) => o !== null) && new Set(owners).size === 2
  })
  t.pass(`payer partitions owned: ${owners.join(', ')}`)
  // /readyz says the same from each instance: who it is, and who owns each payer partition (as it last read the lease).
  type Cluster = { instance: string; venue_feed_here: boolean; payer_partitions: Array<{ partition: number; owner: string | null; here: boolean }> }
  const clusterAt = async (at: string) => ((await (await fetch(`${url[at]}/readyz`)).json()) as { data: { cluster: Cluster } }).data.cluster
  let seen: Record<string, Cluster> = {}
  await within('both instances\' /readyz name the owners the group names', 30_000, async () => {
    seen = { a: await clusterAt('a'), b: await clusterAt('b') }
    return ['a', 'b'].every((at) => seen[at]!.payer_partitions.map((p) => p.owner).join() === owners.join())
  })
  for (const at of ['a', 'b']) {
    t.equal(seen[at]!.instance, at, `${at}'s /readyz names it`)
    t.same(seen[at]!.payer_partitions.filter((p) => p.here).map((p) => p.partition), owners.flatMap((o, p) => (o === at ? [p] : [])), `${at}'s /readyz marks the partitions it owns`)
  }
  t.same([seen.a!.venue_feed_here, seen.b!.venue_feed_here].sort(), [false, true], 'exactly one of them feeds the venue')

  const signInAt = async (at: string, account: ReturnType<typeof privateKeyToAccount>): Promise<SignedIn> => {
    const header = await signChallenge(await fetchChallenge(url[at]!), account, `${publicUrl}/v1/auth/session`)
    const res = await fetch(`${url[at]}/v1/auth/session`, { method: 'POST', headers: { 'sign-in-with-x': header } })
    const body = (await res.json()) as { data: { token: string; address: string; expires_at: string } }
    t.equal(res.status, 201, `signed in at ${at}`)
    const { token, address, expires_at } = body.data
    return { token, address, expires_at, headers: { authorization: `Bearer ${token}`, 'x-svc-payer': address } }
  }

  // Two payers, one owned by each instance (the draws journal's key partitioning).
  const payers: Array<{ me: SignedIn; owner: string; other: string }> = []
  for (const want of ['a', 'b']) {
    for (;;) {
      const account = privateKeyToAccount(generatePrivateKey())
      const owner = owners[partitionForKey(account.address.toLowerCase(), owners.length)]!
      if (owner !== want) continue
      // Signed in at the instance that does not own the payer: the sign-in is forwarded and the session opens at the owner.
      const other = owner === 'a' ? 'b' : 'a'
      payers.push({ me: await signInAt(other, account), owner, other })
      break
    }
  }

  const paidCall = async (at: string, me: SignedIn) => {
    const res = await fetch(`${url[at]}/v1/funding`, { headers: me.headers })
    const body = (await res.json()) as { error?: { code: string; detail: { reason: string } } }
    return { status: res.status, charged: Number(res.headers.get('x-svc-credits-charged') ?? 0), remaining: res.headers.get('ratelimit-remaining'), body }
  }
  const grant = async (payer: string, credits: number, ref: string, at = 'a') => {
    const res = await fetch(`${url[at]}/v1/billing/grants`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-svc-ops': OPS }, body: JSON.stringify({ action: 'grant', payer, credits, ref }) })
    t.equal(res.status, 200, `grant ${ref}`)
  }
  // Read on the instance itself, not forwarded to the owner: a request with a valid peer token is served where it
  // arrives (one hop), so this is each instance's own replica of the balance.
  const peer = new PeerForwarder(Buffer.from(CLUSTER_SIGNING_SECRET, 'hex'))
  const balanceAt = async (at: string, me: SignedIn) => {
    const target = `/v1/billing/credits?payer=${me.address}`
    const res = await fetch(`${url[at]}${target}`, { headers: { ...me.headers, 'x-svc-peer': peer.token('GET', target, Date.now()) } })
    return ((await res.json()) as { data: { balance_credits: number } }).data.balance_credits
  }

  // The price of one call, learnt by a payer of its own (granted plenty), so the payers under test get exactly K calls.
  const prober = await signInAt('a', privateKeyToAccount(generatePrivateKey()))
  await grant(prober.address, 100_000, 'probe')
  let probe!: Awaited<ReturnType<typeof paidCall>>
  await within('a paid call answered', STALENESS_MS * 4, async () => {
    probe = await paidCall('a', prober)
    return probe.status === 200
  })
  const price = probe.charged
  t.ok(price > 0, `a call costs ${price} credits`)

  for (const [n, p] of payers.entries()) {
    await grant(p.me.address, (K + 1) * price, `grant-${n}`)
    // At once after signing in (read-your-writes: the session is at the owner, where the call is forwarded).
    const first = await paidCall(p.other, p.me)
    t.equal(first.status, 200, `payer ${n} (owner ${p.owner}): a paid call sent to ${p.other}, not the owner, right after signing in there, is answered (forwarded)`)
    t.equal(first.charged, price, 'and charged')
    t.match(first.remaining, /^\d+$/, 'with the RateLimit headers of the instance that counted it (the forwarder)')
    // Before the burst: the grant (written by a) and the debit (by the owner) are in both replicas.
    await within('both replicas hold the grant and the first debit', STALENESS_MS, async () => (await balanceAt('a', p.me)) === K * price && (await balanceAt('b', p.me)) === K * price)
    t.pass(`payer ${n}: both instances' own replicas report ${K * price} after the grant and the first call`)
    const sent = 2 * K
    const results = await Promise.all(Array.from({ length: sent }, (_, i) => paidCall(i % 2 === 0 ? 'a' : 'b', p.me)))
    const ok = results.filter((r) => r.status === 200)
    const challenged = results.filter((r) => r.status === 402)
    t.equal(ok.length, K, `payer ${n}: ${sent} concurrent calls alternately to both instances: exactly the ${K} the balance covers are answered`)
    t.equal(challenged.length, K, 'the rest are challenged')
    t.ok(challenged.every((r) => r.body.error?.detail.reason === 'INSUFFICIENT_BALANCE'), 'for insufficient balance')
    const left = (K + 1) * price - price - ok.reduce((s, r) => s + r.charged, 0)
    t.equal(left, 0, 'grants − debits = 0')
    await within('both instances report grants − debits', STALENESS_MS, async () => (await balanceAt('a', p.me)) === left && (await balanceAt('b', p.me)) === left)
    t.equal(await balanceAt(p.owner, p.me), left, `payer ${n}: the owner (${p.owner}) reports grants − debits`)
    t.equal(await balanceAt(p.other, p.me), left, `payer ${n}: and so does the other instance from its own replica`)
  }

  const draws = (await readAll(reader, topicNames().draws)).map((r) => JSON.parse(r.value.toString('utf8')) as { payer: string; kind: string; amount: number; ref: string })
  for (const [n, p] of payers.entries()) {
    const mine = draws.filter((d) => d.payer === p.me.address.toLowerCase())
    const debits = mine.filter((d) => d.kind === 'debit')
    const refs = new Set(debits.map((d) => d.ref))
    t.equal(refs.size, debits.length, `payer ${n}: no debit twice (${debits.length} debits)`)
    const answered = new Set(mine.filter((d) => d.kind === 'answer').map((d) => d.ref))
    t.ok([...refs].every((r) => answered.has(r)), `payer ${n}: every debit has its answer receipt`)
    t.equal(mine.reduce((s, d) => s + d.amount, 0), await balanceAt('a', p.me), `payer ${n}: the journal sums to the balance`)
  }

  const forged = await fetch(`${urlA}/v1/funding`, { headers: { ...payers[0]!.me.headers, 'x-svc-peer': `${Date.now()}.${'0'.repeat(64)}` } })
  const forgedBody = (await forged.json()) as { error: { code: string; detail: { reason: string } } }
  t.equal(forged.status, 403, 'a forwarded request with a wrong peer token is refused')
  t.same([forgedBody.error.code, forgedBody.error.detail.reason], ['OPS_FORBIDDEN', 'PEER_TOKEN_REJECTED'])

  // An operator grant is served by the payer's owner too: the same ref sent to both instances at once credits once.
  await Promise.all(['a', 'b', 'a', 'b'].map((at) => grant(prober.address, 5 * price, 'one-ref', at)))
  const creditRows = async () =>
    (await readAll(reader, topicNames().draws))
      .map((r) => JSON.parse(r.value.toString('utf8')) as { payer: string; kind: string; ref: string })
      .filter((d) => d.payer === prober.address.toLowerCase() && d.kind === 'credit' && d.ref === 'one-ref')
  // Read-committed: a unit is readable once its commit marker is written, a few ms after its acknowledgement.
  await within('the grant readable in the journal', STALENESS_MS, async () => (await creditRows()).length > 0)
  t.equal((await creditRows()).length, 1, 'one grant ref sent to both instances at once credits once')

  // ---- the owner of a payer SIGKILLed mid-burst: the survivor takes its partitions and the sums still hold ----
  const victim = payers.find((p) => p.owner === 'a')!
  const survivor = 'b'
  const N = 20
  await grant(victim.me.address, N * price, 'failover')
  await within('the survivor\'s replica holds the grant', STALENESS_MS, async () => (await balanceAt(survivor, victim.me)) === N * price)
  const during: Array<Awaited<ReturnType<typeof paidCall>>> = []
  const burst = (async () => {
    for (let i = 0; i < N; i++) {
      during.push(await paidCall(survivor, victim.me).catch(() => ({ status: 0, charged: 0, remaining: null, body: {} })))
      await sleep(50)
    }
  })()
  await within('a few calls answered through the owner', 30_000, () => during.filter((r) => r.status === 200).length >= 3)
  a.child.kill('SIGKILL')
  await a.exited
  await burst
  const refused = during.filter((r) => r.status === 503)
  t.ok(refused.every((r) => r.body.error?.code === 'PROVIDER_DOWN' && r.body.error.detail.reason === 'PAYER_OWNER_UNREACHABLE'), `calls while the owner is dead and still holds the partition: 503 PAYER_OWNER_UNREACHABLE (${refused.length} of them)`)
  t.ok(during.every((r) => r.status === 200 || r.status === 503), `every call of the burst is answered or refused with the typed 503 (${during.map((r) => r.status).join(' ')})`)
  const took = await within('the survivor owns the payer and answers for it', SESSION_MS + 60_000, async () => (await paidCall(survivor, victim.me)).status === 200)
  t.pass(`the survivor answered for the dead owner's payer ${took} ms after the kill (session ${SESSION_MS} ms)`)
  // Spend the rest on the survivor: its holds start from every row the dead owner wrote.
  for (let i = 0; i < N + 2; i++) if ((await paidCall(survivor, victim.me)).status === 402) break
  // A transaction the killed owner had open stays open until the broker aborts it (kafkajs' transaction timeout,
  // 60 s): until then no read-committed reader (this one included) sees past it on its partition.
  const rowsOf = async () =>
    (await readAll(reader, topicNames().draws))
      .map((r) => JSON.parse(r.value.toString('utf8')) as { payer: string; kind: string; amount: number; ref: string })
      .filter((d) => d.payer === victim.me.address.toLowerCase())
  let mine = await rowsOf()
  const settled = await within('the dead owner\'s open transaction aborted: the journal readable to its end', 120_000, async () => {
    mine = await rowsOf()
    return mine.reduce((s, d) => s + d.amount, 0) === (await balanceAt(survivor, victim.me))
  })
  t.pass(`the journal was readable to its end ${settled} ms after the survivor spent the rest`)
  const debitRefs = new Set(mine.filter((d) => d.kind === 'debit').map((d) => d.ref))
  const closedRefs = new Set(mine.filter((d) => d.kind === 'answer' || d.kind === 'refund').map((d) => d.ref))
  t.ok([...debitRefs].every((r) => closedRefs.has(r)), `every debit has its answer or its reversal (${debitRefs.size} debits)`)
  t.equal(mine.filter((d) => d.kind === 'debit').length, debitRefs.size, 'no debit twice')
  const sum = mine.reduce((s, d) => s + d.amount, 0)
  t.equal(sum, 0, 'the payer spent exactly its grants: grants − debits + reversals = 0')
  t.equal(await balanceAt(survivor, victim.me), sum, 'and the survivor reports that balance')
})
