/**
 * Signed answers (issue 29, Acceptance "Receipts"), over real HTTP and real secp256k1 signatures (viem): a served
 * record verifies; the same record with any one field changed (probability, decision, event, created_at, a nested
 * field) does not, with the recomputed values beside the claimed ones; an invented record does not; a record signed
 * by a key outside its window does not; the keyring is kept 0600 in a 0700 folder and rotates; README's offline
 * check runs as printed.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { readFile, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts'
import { decisionIdOf } from '../../../engine/identity.ts'
import type { DecisionRecord } from '../../../engine/schemas.ts'
import { AnswerKeyring } from '../../../record/answerKeys/AnswerKeyring.ts'
import { ANSWER_KEYS_DIR, openAnswerKeyring, rotateAnswerKey } from '../../../record/answerKeys/answerKeyFile.ts'
import { signedTextOf } from '../../../record/answerKeys/answerSignature.ts'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { MCP_PATH } from '../../../serving/mcp/McpEndpoint.ts'
import { jsonCaller, withServer } from '../../helpers/serving/server.ts'
import { memoryServices, T0 } from '../../helpers/serving/memoryServices.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { AuthorizingPaymentGate } from '../../helpers/serving/AuthorizingPaymentGate.ts'
import type { TapTest } from '../../helpers/logs.ts'

const ROOT = new URL('../../../', import.meta.url).pathname
const iso = (ms: number) => new Date(ms).toISOString()

/** A record whose decision_id follows from its identity fields, as the engine writes them. */
function recordOf(over: Partial<DecisionRecord> = {}): DecisionRecord {
  const base = {
    question_id: 'S05_volatility_expansion', asset: 'BTC', subject: null, input_hash: 'ab'.repeat(32), policy_version: 'policy-3.0.0',
    event: 'BTC realized volatility over the next 4 hours exceeds the trailing 24-hour level', horizon: '4h',
    horizon_end: iso(T0 + 3 * 3_600_000), created_at: iso(T0 - 3_600_000),
    conditions: { staleness: 'venue data within staleness budget', vol_24h: 0.0123 },
    probability: 0.757, confidence: 0.41, decision: 'expansion', action: 'inform', state_hash: 'cd'.repeat(32), jev_version: '0.3.0',
    ...over,
  }
  return { decision_id: decisionIdOf(base as Parameters<typeof decisionIdOf>[0]), ...base } as DecisionRecord
}

async function served(t: TapTest) {
  const dataDir = await makeTempDir(t)
  const { parts, ledger } = memoryServices()
  let now = T0 - 86_400_000
  const answerKeys = await openAnswerKeyring({ dataDir, now: () => now }) // the key in force since yesterday
  now = T0 // the service's clock when it serves
  const rec = recordOf()
  ledger.add(rec)
  const server = await withServer(t, { services: { ...parts, answerKeys } })
  return { server, call: jsonCaller(server), rec, answerKeys, dataDir, ledger }
}

t.test('a served record verifies; any one changed field does not, with the recomputed values beside the claimed ones', async (t) => {
  const { call, rec, answerKeys } = await served(t)
  const got = await call('GET', `/v1/decisions/${rec.decision_id}`)
  t.equal(got.status, 200)
  t.same(got.body.data, rec, 'data is the ledger record as is')
  const [sig] = got.body.meta.signatures
  t.match(sig, { decision_id: rec.decision_id, scheme: 'eip191-jcs-v1', signer: answerKeys.signer, signature: /^0x[0-9a-f]{130}$/ })
  const again = await call('GET', `/v1/decisions/${rec.decision_id}`)
  t.same(again.body.meta.signatures, [sig], 'served again: the same signature')

  const receipt = { poj_id: rec.decision_id, body: got.body.data, signature: sig }
  const ok = await call('POST', '/v1/verify', receipt)
  t.equal(ok.status, 200)
  t.match(ok.body.data, {
    valid: true, claimed_id: rec.decision_id, recomputed_id: rec.decision_id, id_ok: true,
    signature: { ok: true, reason: 'ok', claimed_signer: answerKeys.signer, recovered_signer: answerKeys.signer, key: { address: answerKeys.signer, valid_until: null } },
    ledger: { status: 'match', differences: [] },
  })

  const alterations: Array<[string, (b: any) => void, string, unknown, unknown]> = [
    ['probability', (b) => (b.probability = 0.01), '/probability', 0.01, 0.757],
    ['decision', (b) => (b.decision = 'calm'), '/decision', 'calm', 'expansion'],
    ['event', (b) => (b.event = 'BTC doubles by Friday'), '/event', 'BTC doubles by Friday', rec.event],
    ['created_at', (b) => (b.created_at = iso(T0 - 60_000)), '/created_at', iso(T0 - 60_000), rec.created_at],
    ['a nested field', (b) => (b.conditions.vol_24h = 0.5), '/conditions/vol_24h', 0.5, 0.0123],
    ['an added field', (b) => (b.note = 'guaranteed'), '/note', 'guaranteed', null],
  ]
  for (const [what, alter, path, claimed, recorded] of alterations) {
    const body = structuredClone(got.body.data)
    alter(body)
    const r = (await call('POST', '/v1/verify', { ...receipt, body })).body.data
    t.equal(r.valid, false, `${what} changed: not valid`)
    // The id covers the identity fields only: it still matches, which is why the signature must cover the rest.
    t.same([r.id_ok, r.recomputed_id], [true, rec.decision_id], `${what}: the recomputed id beside the claimed one`)
    t.equal(r.signature.ok, false, `${what}: the signature does not hold over the changed body`)
    t.not(r.signature.recovered_signer, answerKeys.signer, `${what}: it recovers to another address than the claimed signer`)
    t.same(r.ledger, { status: 'differs', differences: [{ path, claimed, recorded }] }, `${what}: the ledger's value beside the claimed one`)
  }

  // An identity field changed: the id no longer follows either.
  const asset = (await call('POST', '/v1/verify', { ...receipt, body: { ...got.body.data, asset: 'ETH' } })).body.data
  t.same([asset.valid, asset.id_ok], [false, false])
  t.not(asset.recomputed_id, rec.decision_id)
  // The signed_at of the receipt is inside the signed text: moving it breaks the signature.
  const moved = (await call('POST', '/v1/verify', { ...receipt, signature: { ...sig, signed_at: iso(T0 + 60_000) } })).body.data
  t.same([moved.valid, moved.signature.ok], [false, false], 'a moved signed_at does not verify')
  // The spec's receipt without a signature is internally consistent only: not valid.
  const unsigned = (await call('POST', '/v1/verify', { poj_id: rec.decision_id, body: got.body.data })).body.data
  t.same([unsigned.valid, unsigned.id_ok, unsigned.signature, unsigned.ledger.status], [false, true, null, 'match'])
})

t.test('an invented record does not verify: unsigned, signed by an unpublished key, or signed but unknown to the ledger', async (t) => {
  const { call, answerKeys } = await served(t)
  const invented = recordOf({ input_hash: 'ef'.repeat(32), probability: 0.99 })
  t.equal((await call('GET', `/v1/decisions/${invented.decision_id}`)).status, 404, 'its id answers 404')
  const stranger = privateKeyToAccount(generatePrivateKey())
  const signedAt = iso(T0)
  const forged = { signer: stranger.address, signature: await stranger.signMessage({ message: signedTextOf(invented, signedAt) }), signed_at: signedAt }
  const r1 = (await call('POST', '/v1/verify', { poj_id: invented.decision_id, body: invented, signature: forged })).body.data
  t.match(r1, { valid: false, id_ok: true, signature: { ok: false, reason: 'unknown_signer', recovered_signer: stranger.address, key: null }, ledger: { status: 'not_found' } })
  const r2 = (await call('POST', '/v1/verify', { poj_id: invented.decision_id, body: invented })).body.data
  t.match(r2, { valid: false, signature: null, ledger: { status: 'not_found' } })
  // Even the deployment's own signature does not make a record the ledger never held valid.
  const own = await answerKeys.sign(invented)
  const r3 = (await call('POST', '/v1/verify', { poj_id: invented.decision_id, body: invented, signature: own })).body.data
  t.match(r3, { valid: false, signature: { ok: true }, ledger: { status: 'not_found' } })
})

t.test('keys rotate: a retired key verifies inside its window and not outside it; the published list says so', async (t) => {
  const { parts, ledger } = memoryServices()
  const retired = privateKeyToAccount(generatePrivateKey())
  const current = privateKeyToAccount(generatePrivateKey())
  const rotatedAt = iso(T0 - 1_800_000)
  const keys = [
    { address: retired.address, valid_from: iso(T0 - 86_400_000), valid_until: rotatedAt },
    { address: current.address, valid_from: rotatedAt, valid_until: null },
  ]
  const answerKeys = new AnswerKeyring(keys, current, () => T0)
  const rec = recordOf()
  ledger.add(rec)
  const server = await withServer(t, { services: { ...parts, answerKeys } })
  const call = jsonCaller(server)
  const published = await call('GET', '/v1/answer-keys')
  t.same(published.body.data.keys, keys, 'GET /v1/answer-keys publishes both windows')
  const sign = async (signedAt: string) => ({ signer: retired.address, signature: await retired.signMessage({ message: signedTextOf(rec, signedAt) }), signed_at: signedAt })
  const inside = (await call('POST', '/v1/verify', { poj_id: rec.decision_id, body: rec, signature: await sign(iso(T0 - 3_000_000)) })).body.data
  t.match(inside, { valid: true, signature: { ok: true, key: { address: retired.address, valid_until: rotatedAt } } }, 'a receipt the retired key signed in its window still verifies')
  const outside = (await call('POST', '/v1/verify', { poj_id: rec.decision_id, body: rec, signature: await sign(iso(T0)) })).body.data
  t.match(outside, { valid: false, signature: { ok: false, reason: 'outside_window', recovered_signer: retired.address, key: null } }, 'signed after its window: not valid')
  const early = (await call('POST', '/v1/verify', { poj_id: rec.decision_id, body: rec, signature: await sign(iso(T0 - 90_000_000)) })).body.data
  t.match(early, { valid: false, signature: { reason: 'outside_window' } }, 'signed before its window opened: not valid')
  const served = await call('GET', `/v1/decisions/${rec.decision_id}`)
  t.equal(served.body.meta.signatures[0].signer, current.address, 'the key in force signs what is served now')

  // The discovery documents publish the same list (one source).
  const agent = await call('GET', '/.well-known/agent.json')
  t.same(agent.body.answer_keys.keys, keys)
  const openapi = await call('GET', '/openapi.json')
  t.same(openapi.body['x-answer-keys'].keys, keys)
  const llms = await (await fetch(server.url + '/llms.txt')).text()
  for (const k of keys) t.match(llms, k.address, `llms.txt names ${k.address}`)
})

t.test('the keyring file: made once (0600 in a 0700 folder), reopened, rotated, and replaced by a configured key', async (t) => {
  const dataDir = await makeTempDir(t)
  let now = Date.parse('2026-11-01T00:00:00Z')
  const first = await openAnswerKeyring({ dataDir, now: () => now })
  const dir = join(dataDir, ANSWER_KEYS_DIR)
  t.equal((await stat(dir)).mode & 0o777, 0o700)
  t.equal((await stat(join(dir, 'keyring.json'))).mode & 0o777, 0o600)
  t.equal((await openAnswerKeyring({ dataDir, now: () => now })).signer, first.signer, 'a restart signs with the same key')
  now += 86_400_000
  const rotated = await rotateAnswerKey({ dataDir, now: () => now })
  t.same(rotated.retired, { address: first.signer, valid_from: '2026-11-01T00:00:00.000Z', valid_until: '2026-11-02T00:00:00.000Z' })
  const second = await openAnswerKeyring({ dataDir, now: () => now })
  t.equal(second.signer, rotated.active.address)
  t.equal(second.keys.length, 2)
  const file = await readFile(join(dir, 'keyring.json'), 'utf8')
  t.equal(file.match(/private_key/g)?.length, 1, 'only the key in force keeps its private key')
  now += 86_400_000
  const configured = generatePrivateKey()
  const third = await openAnswerKeyring({ dataDir, configuredKey: configured, now: () => now })
  t.equal(third.signer, privateKeyToAccount(configured).address)
  t.same(third.keys.map((k) => k.valid_until), ['2026-11-02T00:00:00.000Z', '2026-11-03T00:00:00.000Z', null], 'the configured key retires the made one')
  t.notMatch(await readFile(join(dir, 'keyring.json'), 'utf8'), configured.slice(2), 'a configured key is never written')
  t.notMatch(await readFile(join(dir, 'keyring.json'), 'utf8'), /private_key/)
  await t.rejects(openAnswerKeyring({ dataDir, configuredKey: '0x1234', now: () => now }), /SVC_ANSWER_KEY/)
  await t.rejects(rotateAnswerKey({ dataDir, configuredKey: configured, now: () => now }), /SVC_ANSWER_KEY is set/)
})

t.test("README's offline check runs as printed: it accepts a served receipt and refuses an altered one", async (t) => {
  const { call, rec } = await served(t)
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8')
  const block = /<!-- offline receipt check: run by test\/record\/answerKeys\/receipts\.test\.ts -->\n```js\n([\s\S]*?)```/.exec(readme)
  if (!t.ok(block, 'README has the marked block')) return
  const dir = await makeTempDir(t)
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  await writeFile(join(dir, 'check.mjs'), block![1]!)
  const got = await call('GET', `/v1/decisions/${rec.decision_id}`)
  await writeFile(join(dir, 'answer-keys.json'), JSON.stringify((await call('GET', '/v1/answer-keys')).body))
  const run = async (body: unknown) => {
    await writeFile(join(dir, 'receipt.json'), JSON.stringify({ poj_id: rec.decision_id, body, signature: got.body.meta.signatures[0] }))
    try {
      const r = await promisify(execFile)(process.execPath, ['check.mjs'], { cwd: dir })
      return { code: 0, out: r.stdout }
    } catch (err) {
      return { code: (err as { code: number }).code, out: (err as { stdout: string }).stdout }
    }
  }
  const good = await run(got.body.data)
  t.same([good.code, good.out.trim()], [0, `signed by ${got.body.meta.signatures[0].signer}, a published answer key in its window`])
  const bad = await run({ ...got.body.data, probability: 0.01 })
  t.equal(bad.code, 1)
  t.match(bad.out, /NOT signed/)
})

t.test('every route and MCP tool that serves the record signs it: latest, lineage, svc_get_decision; svc_verify checks it', async (t) => {
  const { server, call, rec, answerKeys } = await served(t)
  const verify = async (body: unknown, signature: unknown) => (await call('POST', '/v1/verify', { poj_id: rec.decision_id, body, signature })).body.data
  const latest = await call('GET', `/v1/decisions/latest?question_id=${rec.question_id}&asset=BTC`)
  t.same(latest.body.data, rec)
  t.match(await verify(latest.body.data, latest.body.meta.signatures[0]), { valid: true }, 'latest: signed and verifies')
  const lineage = await call('GET', `/v1/lineage/${rec.decision_id.slice(0, 8)}`)
  t.same(lineage.body.meta.signatures.map((x: any) => x.decision_id), [rec.decision_id], 'lineage: its one record signed')
  t.match(await verify(lineage.body.data.decision, lineage.body.meta.signatures[0]), { valid: true }, 'lineage: the record in it verifies')
  t.same((await call('GET', '/v1/feed')).body.meta.signatures, [], 'an answer without a decision record carries none')

  const client = new Client({ name: 'svc-test', version: '0.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url + MCP_PATH)))
  t.teardown(() => client.close())
  const got = (await client.callTool({ name: 'svc_get_decision', arguments: { decision_id: rec.decision_id } })).structuredContent as any
  t.equal(got.meta.signatures[0].signer, answerKeys.signer, 'svc_get_decision: signed')
  const checked = (await client.callTool({ name: 'svc_verify', arguments: { poj_id: rec.decision_id, body: got.data, signature: got.meta.signatures[0] } })).structuredContent as any
  t.match(checked.data, { valid: true, ledger: { status: 'match' } }, 'svc_verify: the receipt from svc_get_decision verifies')
  const altered = (await client.callTool({ name: 'svc_verify', arguments: { poj_id: rec.decision_id, body: { ...got.data, probability: 0.01 }, signature: got.meta.signatures[0] } })).structuredContent as any
  t.match(altered.data, { valid: false, signature: { ok: false } }, 'svc_verify: an altered probability does not')
})

t.test('paid funding answers sign each decision record they carry (S06 and S07 per asset; one per opportunity)', async (t) => {
  const { parts, ledger } = memoryServices()
  const dataDir = await makeTempDir(t)
  const answerKeys = await openAnswerKeyring({ dataDir, now: () => T0 })
  const s06 = recordOf({ question_id: 'S06_funding_anomaly', input_hash: '06'.repeat(32) })
  const s07 = recordOf({ question_id: 'S07_funding_persistence', input_hash: '07'.repeat(32) })
  const eth = recordOf({ question_id: 'S06_funding_anomaly', asset: 'ETH', input_hash: '16'.repeat(32) })
  for (const r of [s06, s07, eth]) ledger.add(r)
  const row = (asset: string) => ({ asset, venue: null, rate: null, unit: 'fraction_per_hour', rate_kind: null, interval_hours: null, next_funding_at: null, next_funding_basis: null, last_settlement: null, provenance: null })
  const assumptions = { economics_modeled: 'none', content: 'raw_context', funding_unit: 'fraction_per_hour', basis_definition: 'perp mark over index', neutral_funding_per_hour: 0.0000125, not_modeled: ['fees'], note: 'raw context' }
  const read = <T>(data: T) => ({ data, state: 'ok', freshness: [], data_sources: ['hyperliquid:perp'] })
  const market = Object.assign(Object.create(Object.getPrototypeOf(parts.market!)), parts.market!, {
    fundingAsset: async () => read({ asset: 'BTC', venue: 'hyperliquid', funding: row('BTC'), decisions: { S06_funding_anomaly: s06, S07_funding_persistence: s07 }, basis: { basis_bps: null, perp_mark: null, index: null }, execution_risk: { top_of_book_depth_usd: null, spread_bps: null }, assumptions }),
    fundingOpportunities: async () => read({ opportunities: [{ asset: 'BTC', funding_bps: null, basis_bps: null, decision: s06 }, { asset: 'ETH', funding_bps: null, basis_bps: null, decision: eth }], assumptions }),
  })
  const server = await withServer(t, { services: { ...parts, market, paymentGate: new AuthorizingPaymentGate(), answerKeys } })
  const call = jsonCaller(server)
  const check = async (body: DecisionRecord, sigs: any[]) => {
    const sig = sigs.find((x) => x.decision_id === body.decision_id)
    return (await call('POST', '/v1/verify', { poj_id: body.decision_id, body, signature: sig })).body.data.valid
  }
  const asset = await call('GET', '/v1/funding/BTC')
  t.equal(asset.status, 200)
  t.same(asset.body.meta.signatures.map((x: any) => x.decision_id), [s06.decision_id, s07.decision_id])
  for (const d of [asset.body.data.decisions.S06_funding_anomaly, asset.body.data.decisions.S07_funding_persistence]) t.equal(await check(d, asset.body.meta.signatures), true, `${d.question_id} verifies`)
  const opp = await call('GET', '/v1/funding/opportunities')
  t.equal(opp.status, 200)
  t.same(opp.body.meta.signatures.map((x: any) => x.decision_id), [s06.decision_id, eth.decision_id])
  for (const o of opp.body.data.opportunities) t.equal(await check(o.decision, opp.body.meta.signatures), true, `${o.asset} verifies`)
})

t.test('signed on a worker thread (as the service signs): the same scheme, verifying; closed, it refuses', async (t) => {
  const { parts, ledger } = memoryServices()
  const answerKeys = await openAnswerKeyring({ dataDir: await makeTempDir(t), now: () => T0, worker: true })
  t.teardown(() => answerKeys.close())
  const rec = recordOf()
  ledger.add(rec)
  const call = jsonCaller(await withServer(t, { services: { ...parts, answerKeys } }))
  const got = await call('GET', `/v1/decisions/${rec.decision_id}`)
  const v = await call('POST', '/v1/verify', { poj_id: rec.decision_id, body: got.body.data, signature: got.body.meta.signatures[0] })
  t.match(v.body.data, { valid: true, signature: { recovered_signer: answerKeys.signer } })
  await answerKeys.close()
  await t.rejects(Promise.resolve(answerKeys.sign(recordOf({ input_hash: '99'.repeat(32) }))), /closed/)
})
