/**
 * The wallet and risk routes over real parts: the real Server on 127.0.0.1, WalletServices / RiskServices over the
 * Hyperliquid wallet provider, whose client talks to the replay server serving the recorded cassettes. Paid routes
 * are authorized by a test PaymentGate (test/helpers/serving/AuthorizingPaymentGate.ts).
 */
import t from 'tap'
import { ACTIVE_POLICY_VERSION } from '../../../models/policy/rulesets.ts'
import { HyperliquidInfoClient } from '../../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { HyperliquidWalletProvider } from '../../../ingest/hyperliquid/HyperliquidWalletProvider.ts'
import { RiskServices } from '../../../product/risk/RiskServices.ts'
import { WalletServices } from '../../../product/wallet/WalletServices.ts'
import { loadCassettes, withReplayServer } from '../../helpers/HyperliquidReplayServer.ts'
import { AuthorizingPaymentGate } from '../../helpers/serving/AuthorizingPaymentGate.ts'
import { makeAjv, withServer } from '../../helpers/serving/server.ts'
import { WALLET_EVENTS, WALLET_POSITIONS, WALLET_PROFILE, WALLET_STATE as WALLET_STATE_RESPONSE } from '../../../product/wallet/schemas.ts'
import { RISK_ASSESSMENT } from '../../../product/risk/schemas.ts'

const ajv = makeAjv()
const conforms = (schema: Record<string, unknown>, data: unknown) => {
  const v = ajv.compile(schema)
  return v(data) ? true : JSON.stringify(v.errors)
}

const DAY = 86_400_000
const FILLS_USER = '0xb7b6f3cea3f66bf525f5d8f965f6dbf6d9b017b2'
const STATE_USER = '0x5e9ee1089755c3435139848e47e6635505d5a13a'
const LEDGER_USER = '0x2ba553d9f990a3b66b03b2dc0d030dfc1c061036'
const FILLS_AT = Date.parse('2023-05-05T00:20:00Z')
const LEDGER_AT = Date.parse('2024-12-01T00:00:00Z')

async function stack(t: Parameters<typeof withServer>[0], now: number, opts: { pageSize?: number } = {}) {
  const replay = await withReplayServer(t, { unrecordedUsers: 'empty_account' })
  const provider = new HyperliquidWalletProvider(new HyperliquidInfoClient({ baseUrl: replay.baseUrl, timeoutMs: 2000 }))
  const clock = { now: () => now }
  const gate = new AuthorizingPaymentGate()
  const server = await withServer(t, {
    services: { paymentGate: gate, wallets: new WalletServices({ provider, clock, ...opts }), risk: new RiskServices({ provider, clock }) },
  })
  const get = async (path: string) => {
    const res = await fetch(`${server.url}${path}`)
    return { status: res.status, body: (await res.json()) as any }
  }
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: res.status, body: (await res.json()) as any }
  }
  return { replay, server, gate, get, post }
}

t.test('profile and state of the recorded fills wallet: an inadequate sample is stated, not hidden', async (t) => {
  const { get, gate } = await stack(t, FILLS_AT)
  const fills = JSON.parse(loadCassettes().interactions.find((i) => i.request.type === 'userFills')!.body) as Array<{ time: number }>
  const times = fills.map((f) => f.time)
  const profile = await get(`/v1/wallet/base/${FILLS_USER}`)
  t.equal(profile.status, 200)
  t.same(Object.keys(profile.body.data).sort(), ['chain', 'profile', 'wallet'])
  t.equal(profile.body.data.wallet, FILLS_USER)
  t.equal(profile.body.data.chain, 'base')
  const p = profile.body.data.profile
  t.same(Object.keys(p).sort(), ['first_seen_at', 'last_active_at', 'net_flow_30d_usd', 'sample_adequacy', 'state'])
  t.equal(p.first_seen_at, new Date(Math.min(...times)).toISOString())
  t.equal(p.last_active_at, new Date(Math.max(...times)).toISOString())
  t.equal(p.net_flow_30d_usd, 0)
  t.match(p.sample_adequacy, { adequate: false, fills_30d: 500, active_days_30d: 1, reason: 'too_few_active_days' })
  t.ok(['WATCHING', 'ACCUMULATING', 'HIGH_CONVICTION', 'DISTRIBUTING', 'EXITING'].includes(p.state))
  t.match(profile.body.meta.pricing, { key: 'wallet.profile' })
  t.equal(conforms(WALLET_PROFILE, profile.body.data), true, 'the registry schema')

  const state = await get(`/v1/wallet/base/${FILLS_USER.toUpperCase().replace('0X', '0x')}/state`)
  t.equal(state.status, 200)
  t.same(Object.keys(state.body.data).sort(), ['chain', 'sample_adequacy', 'since', 'state', 'wallet'])
  t.equal(state.body.data.state, p.state)
  t.equal(state.body.data.wallet, FILLS_USER, 'addresses are served lower-cased')
  t.ok(Date.parse(state.body.data.since) <= FILLS_AT)
  t.equal(conforms(WALLET_STATE_RESPONSE, state.body.data), true)
  t.same(gate.authorized.map((a) => a.pricing_key), ['wallet.profile', 'wallet.state'])
})

t.test('positions: the recorded clearinghouseState as balances with provenance', async (t) => {
  const { get } = await stack(t, FILLS_AT)
  const raw = JSON.parse(loadCassettes().interactions.find((i) => i.request.type === 'clearinghouseState')!.body)
  const res = await get(`/v1/wallet/base/${STATE_USER}/positions`)
  t.equal(res.status, 200)
  const d = res.body.data
  t.same(Object.keys(d).sort(), ['balances', 'chain', 'provenance', 'wallet'])
  t.same(d.balances[0], { kind: 'collateral', asset: 'USDC', account_value_usd: Number(raw.marginSummary.accountValue), withdrawable_usd: Number(raw.withdrawable) })
  const perps = d.balances.slice(1)
  t.equal(perps.length, raw.assetPositions.length)
  t.same(perps.map((b: any) => [b.asset, b.size]), raw.assetPositions.map((a: any) => [a.position.coin, Number(a.position.szi)]))
  t.equal(perps.find((b: any) => b.asset === 'BTC').side, 'short')
  t.match(d.provenance, { source: 'hyperliquid', provider: 'hyperliquid', quality: 'real' })
  t.match(res.body.meta.pricing, { key: 'wallet.state' })
  t.equal(conforms(WALLET_POSITIONS, d), true)
})

t.test('events: newest first, cursor pages, internal and valued rows kept and labelled', async (t) => {
  const { get } = await stack(t, LEDGER_AT, { pageSize: 2 })
  const pages: any[] = []
  let cursor: string | null = null
  do {
    const res = await get(`/v1/wallet/base/${LEDGER_USER}/events?window=30d${cursor ? `&cursor=${cursor}` : ''}`)
    t.equal(res.status, 200)
    t.equal(conforms(WALLET_EVENTS, res.body.data), true)
    pages.push(res.body.data)
    cursor = res.body.data.next_cursor
  } while (cursor && pages.length < 10)
  t.same(pages.map((p) => p.count), [2, 2, 1])
  const events = pages.flatMap((p) => p.events)
  t.same(events.map((e: any) => e.type), ['deposit', 'accountClassTransfer', 'spotTransfer', 'accountClassTransfer', 'deposit'])
  t.ok(events.every((e: any, i: number) => i === 0 || e.time <= events[i - 1].time), 'newest first')
  t.same(Object.keys(events[0]).sort(), ['amount', 'counterparty', 'direction', 'event_id', 'fee_usd', 'hash', 'time', 'token', 'type', 'usd_value', 'valued'])
  t.match(events[2], { type: 'spotTransfer', direction: 'out', usd_value: 10.5, valued: true, counterparty: '0xaaa0c2769cb990f4f37db951a9e48de2385c2733' })
  t.match(events[1], { direction: 'internal', valued: false })
  t.equal(new Set(events.map((e: any) => e.event_id)).size, 5)
  t.ok(pages.every((p) => p.from === pages[0].from && p.to === pages[0].to), 'the cursor pins the window')

  const dflt = await get(`/v1/wallet/base/${LEDGER_USER}/events`)
  t.equal(dflt.body.data.window, '24h', 'window defaults to 24h')
  t.equal(dflt.body.data.count, 0, 'nothing in the last 24h: an empty page is data')
  t.match(await get(`/v1/wallet/base/${LEDGER_USER}/events?cursor=nonsense`), { status: 400, body: { error: { code: 'VALIDATION' } } })
  t.match(await get(`/v1/wallet/base/${LEDGER_USER}/events?window=0h`), { status: 400, body: { error: { code: 'VALIDATION' } } })
  t.match(await get(`/v1/wallet/solana/${LEDGER_USER}`), { status: 400, body: { error: { code: 'VALIDATION' } } })
})

t.test('risk: the four subject kinds, one pipeline, differing only in the label; recorded wallet refuses', async (t) => {
  const { post } = await stack(t, FILLS_AT)
  const validate = makeAjv().compile(RISK_ASSESSMENT)
  const candidate = { tx_hash: `0x${'ab'.repeat(32)}`, log_index: 3, block_time: '2023-05-05T00:19:00Z', direction: 'out', asset: 'USDC', amount: 250, usd_value: 250, counterparty: null }
  const answers: any[] = []
  for (const kind of ['transaction', 'token', 'wallet', 'protocol']) {
    const res = await post(`/v1/risk/${kind}`, { asset: 'ETH', address: FILLS_USER, candidate, ...(kind === 'token' ? { token: { symbol: 'USDC' } } : {}) })
    t.equal(res.status, 200, kind)
    t.ok(validate(res.body.data), `${kind}: ${JSON.stringify(validate.errors)}`)
    t.match(res.body.data, {
      subject: { kind, address: FILLS_USER },
      risk: 'review',
      allow_probability: 0, review_probability: 0, block_probability: 0, confidence: 0,
      decision: 'insufficient_confidence', action: 'refuse', policy_version: ACTIVE_POLICY_VERSION,
      full: { question_id: 'S11_risk', refusal_reason: 'wallet_sample_inadequate' },
    })
    answers.push(res.body.data)
  }
  const strip = (a: any) => ({ ...a, subject: { ...a.subject, kind: '_' }, input_hash: '_', full: { ...a.full, token: null, event: a.full.event.replace(/the \w+ subject/, '_'), conditions: { ...a.full.conditions, subject_kind: '_' }, features: { ...a.full.features, subject_kind_index: 0 }, freshness: '_' } })
  for (const a of answers.slice(1)) t.same(strip(a), strip(answers[0]))
  t.equal(new Set(answers.map((a) => a.input_hash)).size, 4, 'the label is a journaled input')
})

t.test('provider down is 503 PROVIDER_DOWN with nothing charged; unwired is SERVICE_UNWIRED', async (t) => {
  const { replay, get, post, gate } = await stack(t, FILLS_AT)
  replay.injectFault('status500', 1)
  const down = await get(`/v1/wallet/base/${FILLS_USER}`)
  t.equal(down.status, 503)
  t.match(down.body.error, { code: 'PROVIDER_DOWN', retryable: true, detail: { provider: 'hyperliquid', provider_reason: 'http_status' } })
  t.equal(gate.settled.length, 0)
  t.equal(gate.released.length, 1, 'the reservation is released')
  const candidate = { tx_hash: `0x${'ab'.repeat(32)}`, log_index: 0, block_time: '2023-05-05T00:19:00Z', direction: 'in', asset: 'USDC', amount: 1, usd_value: 1, counterparty: null }
  await replay.close()
  const risk = await post('/v1/risk/wallet', { asset: 'BTC', address: FILLS_USER, candidate })
  t.equal(risk.status, 503)
  t.match(risk.body.error, { code: 'PROVIDER_DOWN', detail: { provider_reason: 'unreachable' } })
  t.notOk('data' in risk.body, 'no decision')

  const bare = await withServer(t, { services: { paymentGate: new AuthorizingPaymentGate() } })
  const res = await fetch(`${bare.url}/v1/wallet/base/${FILLS_USER}/state`)
  t.equal(res.status, 503)
  t.match(await res.json(), { error: { code: 'PROVIDER_DOWN', detail: { reason: 'SERVICE_UNWIRED', missing: 'wallets' } } })
})
