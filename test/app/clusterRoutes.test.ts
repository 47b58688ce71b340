/**
 * Issue 32, acceptance 2: the hidden contract answers the same through any instance. Two `svc start` processes
 * (SVC_CLUSTER=on) on the real broker behind serving/cluster/Balancer.ts, which both name as their base URL; a subset
 * of the route tests run through the balancer's URL and, where it shows something, each instance's own port. Requests
 * through the balancer send `connection: close`, so each is a new connection and the balancer's rotation alternates
 * the instances (a keep-alive client would stick to one). Payer-scoped requests reaching the instance that does not
 * own the payer are forwarded to the owner; public reads are served where they arrive, from that instance's replica.
 * Each instance starts with the operator's release (S01 on the recorded OKX SOL tape, `svc release`) in its data
 * folder: a test's short simulated history is too short for the bootstrap release to pass its gates.
 * - Paid calls on the credits rail: payers signed in with real viem keys (sign-in-with-x), credits granted by the
 *   operator route; the decision bought through the balancer is the same record on each instance, its receipt
 *   matches each instance's ledger; a payer without credits gets the same 402 INSUFFICIENT_BALANCE (same detail) from
 *   each; each instance reports grants − debits.
 * - The duel: the bought decision's clock listed by each; a call locked through the balancer, then refused as
 *   CALL_ALREADY_LOCKED by each (nothing charged); a call on a refusal decision refused NOT_A_CLAIM by each; the
 *   personal scoreboard the same on each.
 * - The Arena: the paid ask's XP and the opt-in on the profile from each; the leaderboard the same on each; the public
 *   card of the opted-in payer.
 * - Delivery: a resolution hook armed on the open clock (paid), an unknown decision 404 on each, a private address 400
 *   UNSAFE_URL; a hook endpoint (the 49,000-credit add-on) registered on a is replayed by b without a charge and
 *   without its secret, and listed the same by both; nothing reaches the local receiver before a resolution.
 *   Not covered: a delivery on resolution, and CLOCK_CLOSED / HOOK_CLOCK_TERMINAL (they need a resolved clock). Every
 *   question's horizon is at least an hour of the simulated venue's present (1x) and the engine decides in the present
 *   only, so no clock this test can see resolves within its few minutes; the spec has no test-fire route. Once per
 *   resolution across instances is acceptance 1's (a local receiver counting) and the delivery lease's tests.
 * - MCP with the official SDK client through the balancer, every request on a new connection (the initialize on one
 *   instance, the following requests on both): tools/list, a free tool, a paid tool on credits read back by
 *   svc_get_decision, and the credits refusal as the tool's payment challenge. The server is stateless (no session id),
 *   so nothing has to stick to one instance.
 * The Arena: each instance follows its journals (an opt-in or an ask's XP written at the payer's owner reaches the other
 * instance's profile, card and boards) and a payer's awards are written by its owner alone (no award twice).
 * About 90 s of wall time on the shared 2-core machine, broker already up.
 */
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CLUSTER_SIGNING_SECRET, spawnClusterInstance } from '../../bench/clusterInstance.ts'
import { PeerForwarder } from '../../serving/cluster/PeerForwarder.ts'
import { Balancer } from '../../serving/cluster/Balancer.ts'
import { freePort } from '../../bench/freePort.ts'
import { kafkaBrokers, kafkaSkip, readAll } from '../helpers/logs.ts'
import { KafkaLog } from '../../pipeline/log/KafkaLog.ts'
import { EXPERIENCE } from '../../pipeline/records/experienceRecord.ts'
import { signIn } from '../helpers/serving/signIn.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { READY_WITHIN_MS, activateS01Release, call, startPair, type Answer, type Json } from '../helpers/cluster.ts'
import { within } from '../helpers/until.ts'

const SESSION_MS = 6_000
const OPS = `ops-${randomBytes(8).toString('hex')}`
/** The followers' fetch wait (500 ms on Kafka) with room for a loaded machine. */
const STALENESS_MS = 10_000
const GRANT = 200_000
const ENDPOINT_PRICE = 49_000
t.setTimeout(READY_WITHIN_MS * 2 + 300_000)


const skip = kafkaSkip(t)



const charged = (a: Answer) => Number(a.headers.get('x-svc-credits-charged') ?? 0)
const errorOf = (a: Answer) => [a.status, a.body?.error?.code, a.body?.error?.detail?.reason]

t.test('the contract through a two-instance cluster: paid, duel, Arena, delivery and MCP', { skip }, async (t) => {
  const prefix = `cr${randomBytes(4).toString('hex')}.`
  const ports: Record<string, number> = { a: await freePort(), b: await freePort() }
  const balancer = await Balancer.start({ port: 0, host: '127.0.0.1', upstreams: [{ host: '127.0.0.1', port: ports.a! }, { host: '127.0.0.1', port: ports.b! }], probeEveryMs: 200 })
  t.teardown(() => balancer.close())
  const bal = `http://127.0.0.1:${balancer.port}`

  // The hook receiver: counts what reaches it.
  const received: Array<{ path: string; id: string | undefined }> = []
  const receiver = createServer((req, res) => {
    received.push({ path: req.url ?? '', id: req.headers['x-svc-delivery-id'] as string | undefined })
    req.resume()
    req.on('end', () => res.end('ok'))
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()))
  t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())))
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`

  // The operator's S01 release in each folder before its start (activateS01Release says why).
  const dirs: Record<string, string> = {}
  for (const name of ['a', 'b']) dirs[name] = await makeTempDir(t, `svc-routes-${name}-`)
  await Promise.all(Object.values(dirs).map((dataDir) => activateS01Release(dataDir)))
  const start = async (name: string) => {
    const env = {
      KAFKA_SESSION_TIMEOUT_MS: String(SESSION_MS), SVC_OPS_TOKEN: OPS, PORT: String(ports[name]), SVC_BASE_URL: bal,
      // TEST ONLY: the URL guard lets the local receiver through (and nothing else private).
      SVC_DELIVERY_ALLOW: '127.0.0.1/32',
      // S01's regime baseline is the 7-day Parkinson volatility: a shorter history answers every S01 ask with a refusal.
      SVC_SIM_HISTORY_DAYS: '8',
    }
    const i = spawnClusterInstance({ name, dataDir: dirs[name]!, prefix, brokers: kafkaBrokers()!.join(','), env })
    // Registered after its data dir's removal: tap runs teardowns last-in first-out, so it has exited before that.
    t.teardown(i.stop)
    return i
  }
  const { urlA, urlB } = await startPair(start)
  // Both in the balancer's rotation (it probes /readyz every 200 ms).
  await within('both instances in the balancer\'s rotation', 10_000, async () => balancer.upstreams.every((u) => u.inService))
  const each = { a: urlA, b: urlB } as const
  const peer = new PeerForwarder(Buffer.from(CLUSTER_SIGNING_SECRET, 'hex'))
  const both = async (f: (base: string) => Promise<Answer>) => ({ a: await f(urlA), b: await f(urlB) })

  // ---- paid calls on the credits rail ---------------------------------------------------------------------------
  const alice = await signIn(bal, privateKeyToAccount(generatePrivateKey()))
  const bob = await signIn(bal, privateKeyToAccount(generatePrivateKey()))
  const grant = await call(bal, 'POST', '/v1/billing/grants', { body: { action: 'grant', payer: alice.address, credits: GRANT, ref: 'routes-alice' }, headers: { 'x-svc-ops': OPS } })
  t.equal(grant.status, 200, 'credits granted through the operator route, through the balancer')
  let spent = 0
  // A claim (the duel and the hook need its clock): the house may refuse an asset whose regime it cannot call with
  // confidence at this minute, so the assets are asked in turn until one is a claim (each ask paid and counted).
  let ask = { asset: 'SOL', question_id: 'S01_market_regime' }
  let bought!: Answer
  for (const asset of ['SOL', 'BTC', 'ETH']) {
    ask = { asset, question_id: 'S01_market_regime' }
    await within('a paid decision answered through the balancer', STALENESS_MS, async () => {
      bought = await call(bal, 'POST', '/v1/decisions', { body: ask, headers: alice.headers })
      return bought.status === 200
    })
    spent += charged(bought)
    if (bought.body.data.action !== 'refuse') break
  }
  t.not(bought.body.data.action, 'refuse', `a claim: ${bought.body.data.asset} ${bought.body.data.decision}`)
  const decision = bought.body.data
  t.ok(charged(bought) > 0, `paid with credits: ${charged(bought)} charged`)
  t.equal(bought.body.meta.pricing.rail, 'credits', 'on the credits rail')
  t.equal(bought.body.meta.pricing.credits, charged(bought), 'the price it says is what was charged')
  t.match(decision, { question_id: ask.question_id, asset: ask.asset, decision_id: /^[0-9a-f-]{36}$/ })
  const receipt = { poj_id: decision.decision_id, body: decision, signature: bought.body.meta.signatures[0] }
  t.equal(receipt.signature.decision_id, decision.decision_id, 'the answer carries its signature')

  // The same record on each instance, and its receipt checked by each: every instance publishes every instance's
  // answer key (record/answerKeys/ClusterAnswerKeys.ts), so a receipt verifies wherever it is checked.
  let keys!: { a: Answer; b: Answer }
  await within('both instances publish both answer keys', STALENESS_MS, async () => {
    keys = await both((base) => call(base, 'GET', '/v1/answer-keys'))
    return keys.a.body.data.keys.length === 2 && keys.b.body.data.keys.length === 2
  })
  t.same(keys.a.body.data.keys, keys.b.body.data.keys, 'both instances publish the same answer keys: one per instance')
  t.ok((keys.a.body.data.keys as Array<{ address: string }>).some((k) => k.address === receipt.signature.signer), 'the receipt\'s signer among them')
  for (const [name, base] of Object.entries(each)) {
    let back!: Answer
    await within(`instance ${name} holds the decision`, STALENESS_MS, async () => (back = await call(base, 'GET', `/v1/decisions/${decision.decision_id}`)).status === 200)
    t.same(back.body.data, decision, `instance ${name} serves the same decision record`)
    const verified = await call(base, 'POST', '/v1/verify', { body: receipt })
    t.equal(verified.status, 200)
    t.equal(verified.body.data.ledger.status, 'match', `instance ${name}'s ledger holds exactly the body the balancer's answer carried`)
    t.equal(verified.body.data.recomputed_id, decision.decision_id, `instance ${name} recomputes the id`)
    t.equal(verified.body.data.valid, true, `instance ${name} verifies the receipt`)
  }

  // A refusal: a payer without credits gets the same challenge from each instance, and nothing is charged.
  const broke = await both((base) => call(base, 'POST', '/v1/decisions', { body: ask, headers: bob.headers }))
  t.same(errorOf(broke.a), [402, 'PAYMENT_REQUIRED', 'INSUFFICIENT_BALANCE'], 'no credits: 402 INSUFFICIENT_BALANCE from a')
  t.same(errorOf(broke.b), errorOf(broke.a), 'and the same from b')
  t.same(broke.b.body.error.detail, broke.a.body.error.detail, 'with the same detail (balance, required credits)')

  const balanceOn = async (base: string, me: typeof alice) => (await call(base, 'GET', `/v1/billing/credits?payer=${me.address}`, { headers: me.headers })).body.data.balance_credits as number
  await within('each instance reports grants − debits', STALENESS_MS, async () => (await balanceOn(urlA, alice)) === GRANT - spent && (await balanceOn(urlB, alice)) === GRANT - spent)
  t.equal(await balanceOn(urlA, alice), GRANT - spent, `a reports grants − debits (${GRANT - spent})`)
  t.equal(await balanceOn(urlB, alice), GRANT - spent, 'and so does b')
  t.equal(await balanceOn(bal, bob), 0, 'the refused payer was charged nothing')

  // ---- the duel ---------------------------------------------------------------------------------------------------
  // The S01 decision bought above is a claim on a clock an hour long; an S03 decision (no family in the release) is a
  // refusal: no claim, no clock.
  let clocks!: { a: Answer; b: Answer }
  await within('both instances list the bought decision\'s clock', STALENESS_MS, async () => {
    clocks = await both((base) => call(base, 'GET', '/v1/clocks/open'))
    return [clocks.a, clocks.b].every((c) => (c.body?.data?.clocks ?? []).some((x: { decision_id: string }) => x.decision_id === decision.decision_id))
  })
  const open = (clocks.a.body.data.clocks as Array<{ decision_id: string; horizon_end: string }>).find((c) => c.decision_id === decision.decision_id)!
  t.equal(open.horizon_end, decision.horizon_end, 'an open clock for the bought decision, ending at its horizon')
  t.ok(Date.parse(open.horizon_end) > Date.now() + 60_000, `ending after this test (${open.horizon_end})`)
  t.same(clocks.b.body.data.clocks.find((c: { decision_id: string }) => c.decision_id === decision.decision_id), open, 'the same clock on b')
  const refusal = await call(bal, 'POST', '/v1/decisions', { body: { asset: 'BTC', question_id: 'S03_trend_continuation' }, headers: alice.headers })
  t.equal(refusal.status, 200, 'a question the release does not serve: an honest refusal (200)')
  t.equal(refusal.body.data.confidence, 0, 'with confidence 0')
  spent += charged(refusal)

  const locked = await call(bal, 'POST', '/v1/calls', { body: { decision_id: open.decision_id, call: 'obtains', call_probability: 0.6 }, headers: alice.headers })
  t.equal(locked.status, 201, 'a call locked through the balancer')
  t.match(locked.body.data, { decision_id: open.decision_id, call: 'obtains' })
  spent += charged(locked)
  t.ok(charged(locked) > 0, 'paid at the decision price')
  const again = await both((base) => call(base, 'POST', '/v1/calls', { body: { decision_id: open.decision_id, call: 'not' }, headers: alice.headers }))
  t.same(errorOf(again.a), [409, 'CALL_ALREADY_LOCKED', 'CALL_ALREADY_LOCKED'], 'the same call again on a: CALL_ALREADY_LOCKED')
  t.same(errorOf(again.b), errorOf(again.a), 'and on b')
  t.equal(charged(again.a) + charged(again.b), 0, 'nothing charged for the refusals')
  const noClaim = await both((base) => call(base, 'POST', '/v1/calls', { body: { decision_id: refusal.body.data.decision_id, call: 'obtains' }, headers: alice.headers }))
  t.same(errorOf(noClaim.a), [400, 'VALIDATION', 'NOT_A_CLAIM'], 'a call on a refusal decision on a: no clock to call')
  t.same(errorOf(noClaim.b), errorOf(noClaim.a), 'and on b')
  let boards!: { a: Answer; b: Answer }
  await within('both scoreboards show the call', STALENESS_MS, async () => {
    boards = await both((base) => call(base, 'GET', `/v1/calls?payer=${alice.address}`, { headers: alice.headers }))
    return boards.a.body.data.calls === 1 && boards.b.body.data.calls === 1
  })
  t.match(boards.a.body.data, { calls: 1, open: 1, graded: 0, player_accuracy: null }, 'the personal scoreboard on a: one open call, accuracy null (never zero)')
  t.same(boards.b.body.data, boards.a.body.data, 'the same on b')

  // ---- the Arena --------------------------------------------------------------------------------------------------
  const optIn = await call(bal, 'POST', '/v1/arena/opt-in', { body: { opt_in: true }, headers: { ...alice.headers, payer: alice.address } })
  t.equal(optIn.status, 200, 'opted in to the boards through the balancer')
  let profiles!: { a: Answer; b: Answer }
  await within('both instances show the ask XP and the opt-in', STALENESS_MS, async () => {
    profiles = await both((base) => call(base, 'GET', '/v1/arena/profile', { headers: { ...alice.headers, payer: alice.address } }))
    return [profiles.a, profiles.b].every((p) => p.body?.data?.xp > 0 && p.body.data.board_opt_in === true)
  })
  const profile = profiles.a.body.data
  t.equal(profile.payer, alice.address.toLowerCase(), 'the profile of the payer')
  t.ok(profile.xp >= 10, `the paid ask earned XP (${profile.xp})`)
  for (const f of ['xp', 'rank', 'stats', 'badges', 'board_opt_in', 'is_agent', 'next_rank', 'remaining_xp']) t.same(profiles.b.body.data[f], profile[f], `b's profile has a's ${f}`)
  // The boards list opted-in payers with a graded call: none resolves within this test, so the boards are compared
  // as they are (both instances the same), and the opted-in payer's public card read on each.
  const leaders = await both((base) => call(base, 'GET', '/v1/arena/leaderboard?sort=xp&limit=200'))
  t.equal(leaders.a.status, 200, 'the leaderboard on a')
  t.same(leaders.b.body.data.rows, leaders.a.body.data.rows, `the same rows on b (${leaders.a.body.data.rows.length})`)
  t.type(profile.public_id, 'string', 'the opted-in payer has a public card id')
  // The card is a public read, served where it arrives (not forwarded to the payer's owner).
  let cards!: { a: Answer; b: Answer }
  await within('the card on the instance that took the opt-in', STALENESS_MS, async () => {
    cards = await both((base) => call(base, 'GET', `/v1/arena/card/${profile.public_id}`))
    return cards.a.status === 200 || cards.b.status === 200
  })
  const [home, away] = cards.a.status === 200 ? (['a', 'b'] as const) : (['b', 'a'] as const)
  const card = cards[home].body.data
  t.equal(card.xp, profile.xp, `the card on ${home} shows the XP`)
  t.equal(card.handle, profile.handle, 'and the handle')
  t.notMatch(JSON.stringify(card), alice.address.slice(2).toLowerCase(), 'without the address')
  await within('the card on both instances', STALENESS_MS, async () => (await call(each[away], 'GET', `/v1/arena/card/${profile.public_id}`)).status === 200)
  const awayCard = await call(each[away], 'GET', `/v1/arena/card/${profile.public_id}`)
  t.same({ status: awayCard.status, data: awayCard.body.data }, { status: 200, data: card }, `the same card on ${away} (${awayCard.status} ${awayCard.body.error?.code ?? ''})`)
  // That instance's own replica of the profile (a valid peer token: served where it arrives, not forwarded).
  const target = '/v1/arena/profile'
  const replica = await call(each[away], 'GET', target, { headers: { ...alice.headers, payer: alice.address, 'x-svc-peer': peer.token('GET', target, Date.now()) } })
  t.equal(replica.status, 200, `${away}'s own replica of the profile answers`)
  t.same({ xp: replica.body.data.xp, board_opt_in: replica.body.data.board_opt_in }, { xp: profile.xp, board_opt_in: true }, `${away}'s own replica has the XP and the opt-in (xp ${replica.body.data.xp}, opt-in ${replica.body.data.board_opt_in})`)

  // Every award once in the Arena's journal, whichever instance folded the call events (each instance's duel follows
  // every call, so each Arena sees every lock).
  const reader = await KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: 'svc-test-cluster-routes', topicPrefix: prefix })
  t.teardown(() => reader.close())
  const awards = (await readAll(reader, 'arena.experience')).map((r) => EXPERIENCE.decode(r.value))
  const awardIds = awards.map((x) => `${x.payer} ${x.id}`)
  const awardedTwice = awardIds.filter((id, i) => awardIds.indexOf(id) !== i)
  t.same(awardedTwice, [], `no XP award twice in the experience journal (${awards.length} awards: ${[...new Set(awards.map((x) => x.kind))].join(', ')})`)

  // ---- delivery ---------------------------------------------------------------------------------------------------
  const hook = await call(bal, 'POST', '/v1/hooks', { body: { decision_id: open!.decision_id, url: `${receiverUrl}/hook` }, headers: alice.headers })
  t.equal(hook.status, 201, 'a resolution hook armed on the open clock through the balancer')
  t.match(hook.body.data, { decision_id: open!.decision_id, status: 'armed', secret: /^whsec_/, horizon_end: open!.horizon_end })
  spent += charged(hook)
  t.ok(charged(hook) > 0, 'paid at the decision price')
  const unknown = await both((base) => call(base, 'POST', '/v1/hooks', { body: { decision_id: '00000000-0000-8000-8000-000000000000', url: `${receiverUrl}/hook` }, headers: alice.headers }))
  t.same(errorOf(unknown.a).slice(0, 2), [404, 'DECISION_NOT_FOUND'], 'an unknown decision on a: 404 DECISION_NOT_FOUND')
  t.same(errorOf(unknown.b), errorOf(unknown.a), 'and on b')
  const unsafe = await call(bal, 'POST', '/v1/hooks', { body: { decision_id: open!.decision_id, url: 'http://10.1.2.3/hook' }, headers: alice.headers })
  t.same(errorOf(unsafe), [400, 'UNSAFE_URL', 'URL_ADDRESS_REFUSED'], 'a private address: 400 UNSAFE_URL')

  const endpointUrl = `${receiverUrl}/endpoint`
  const registered = await call(urlA, 'POST', '/v1/hook-endpoints', { body: { url: endpointUrl }, headers: alice.headers })
  t.equal(registered.status, 201, 'a hook endpoint registered on a')
  t.match(registered.body.data, { status: 'registered', url: endpointUrl, secret: /^whsec_/ })
  t.equal(charged(registered), ENDPOINT_PRICE, 'one debit of the add-on price')
  spent += charged(registered)
  let replay!: Answer
  await within('b replays the endpoint a registered', STALENESS_MS, async () => (replay = await call(urlB, 'POST', '/v1/hook-endpoints', { body: { url: endpointUrl }, headers: alice.headers })).status === 200)
  t.equal(replay.body.data.endpoint_id, registered.body.data.endpoint_id, 'the same URL on b: the same endpoint (replayed)')
  t.equal(replay.body.data.secret, undefined, 'without its secret')
  t.equal(charged(replay), 0, 'and without a charge')
  let listed!: { a: Answer; b: Answer }
  await within('both list the endpoint', STALENESS_MS, async () => {
    listed = await both((base) => call(base, 'GET', '/v1/hook-endpoints', { headers: alice.headers }))
    return listed.a.body.data.count === 1 && listed.b.body.data.count === 1
  })
  t.equal(listed.a.body.data.items[0].endpoint_id, registered.body.data.endpoint_id, 'a lists it')
  t.same(listed.b.body.data.items, listed.a.body.data.items, 'b lists the same')
  await within('each instance reports grants − debits after the duel and delivery', STALENESS_MS, async () => (await balanceOn(urlA, alice)) === GRANT - spent && (await balanceOn(urlB, alice)) === GRANT - spent)
  t.equal(await balanceOn(urlB, alice), GRANT - spent, `grants − debits on b after every paid route (${GRANT - spent})`)
  t.equal(received.length, 0, 'nothing delivered before any resolution of those clocks')

  // ---- MCP --------------------------------------------------------------------------------------------------------
  // Every request on a new connection through the balancer: the initialize reaches one instance, the next the other.
  const seen: string[] = []
  const servedBefore = balancer.upstreams.map((u) => u.served)
  const alternating: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers)
    headers.set('connection', 'close')
    const res = await fetch(input, { ...init, headers })
    seen.push(`${init?.method ?? 'GET'} ${res.status}`)
    return res
  }
  const connect = async (headers: Record<string, string>) => {
    const client = new Client({ name: 'svc-cluster-routes', version: '0.0.0' })
    const transport = new StreamableHTTPClientTransport(new URL(`${bal}/mcp`), { requestInit: { headers }, fetch: alternating })
    await client.connect(transport)
    t.teardown(() => client.close())
    return { client, transport }
  }
  const structured = (r: unknown) => (r as { structuredContent?: unknown }).structuredContent as Json
  const { client: agent, transport } = await connect(alice.headers)
  t.equal(transport.sessionId, undefined, 'a stateless server: no MCP session to keep on one instance')
  const { tools } = await agent.listTools()
  t.equal(tools.length, 28, 'tools/list: the 28 tools')
  t.ok(['svc_market_state', 'svc_decision', 'svc_get_decision', 'svc_call'].every((n) => tools.some((x) => x.name === n)), 'free and paid tools listed')
  const market = await agent.callTool({ name: 'svc_market_state', arguments: { asset: 'ETH' } })
  t.notOk(market.isError, 'a free tool: svc_market_state')
  t.equal(structured(market).data.provenance.source, 'simulated', 'the simulated market')
  const before = await balanceOn(urlA, alice)
  const paid = await agent.callTool({ name: 'svc_decision', arguments: { asset: 'ETH', question_id: 'S01_market_regime' } })
  t.notOk(paid.isError, 'a paid tool on credits: svc_decision')
  const mcpDecision = structured(paid).data
  t.equal(structured(paid).meta.pricing.rail, 'credits', 'on the credits rail')
  t.match(mcpDecision, { asset: 'ETH', question_id: 'S01_market_regime', decision_id: /^[0-9a-f-]{36}$/ })
  await within('the MCP debit in the replica', STALENESS_MS, async () => before - (await balanceOn(urlB, alice)) === structured(paid).meta.pricing.credits)
  t.pass(`the balance paid the price (${structured(paid).meta.pricing.credits})`)
  let readBack!: Awaited<ReturnType<typeof agent.callTool>>
  await within('svc_get_decision finds it', STALENESS_MS, async () => !(readBack = await agent.callTool({ name: 'svc_get_decision', arguments: { decision_id: mcpDecision.decision_id } })).isError)
  t.same(structured(readBack).data, mcpDecision, 'svc_get_decision reads back the same record')
  const { client: unfunded } = await connect(bob.headers)
  const refused = await unfunded.callTool({ name: 'svc_decision', arguments: { asset: 'ETH', question_id: 'S01_market_regime' } })
  t.ok(refused.isError, 'a paid tool without credits: a tool error, never data')
  t.equal(structured(refused).svc_error.detail.reason, 'INSUFFICIENT_BALANCE', 'the challenge says why')
  t.equal(structured(refused).x402Version, 2, 'the standard x402 challenge')
  t.ok(seen.length >= 6 && seen.every((s) => !s.endsWith(' 404') && !s.endsWith(' 400')), `every MCP request answered (${seen.join(', ')})`)
  const servedDuring = balancer.upstreams.map((u, i) => u.served - servedBefore[i]!)
  t.ok(servedDuring.every((n) => n >= 3), `and they went to both instances (${servedDuring.join(' and ')} connections)`)
})
