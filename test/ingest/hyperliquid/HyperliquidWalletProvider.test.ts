/**
 * The Hyperliquid wallet provider and the account features over the recorded cassettes, served by the real replay
 * server on 127.0.0.1 (the client is not stubbed). Expected values are recomputed from the cassette bodies
 * (../shared/reference/hyperliquid/cassettes: test_get_user_state.yaml, test_get_user_fills.yaml,
 * test_user_funding_history_*.yaml, test_user_non_funding_ledger_updates_*.yaml).
 */
import t from 'tap'
import { HyperliquidInfoClient } from '../../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { HyperliquidWalletProvider, mapLedgerUpdate } from '../../../ingest/hyperliquid/HyperliquidWalletProvider.ts'
import { NoWalletProvider } from '../../../ingest/wallet/NoWalletProvider.ts'
import { computeWalletFeatures, flowSummary, MIN_ACTIVE_DAYS_30D } from '../../../models/account/WalletFeatures.ts'
import { WalletProviderError } from '../../../ingest/wallet/WalletProviderError.ts'
import { loadCassettes, withReplayServer } from '../../helpers/HyperliquidReplayServer.ts'

const STATE_USER = '0x5e9ee1089755c3435139848e47e6635505d5a13a'
const FILLS_USER = '0xb7b6f3cea3f66bf525f5d8f965f6dbf6d9b017b2'
const LEDGER_USER = '0x2ba553d9f990a3b66b03b2dc0d030dfc1c061036'
const DAY = 86_400_000
/** Just after the last recorded fill of FILLS_USER (2023-05-05T00:18:04Z). */
const FILLS_AT = Date.parse('2023-05-05T00:20:00Z')
/** After the last recorded ledger update of LEDGER_USER (2024-11-29T08:02Z). */
const LEDGER_AT = Date.parse('2024-12-01T00:00:00Z')

const { interactions } = loadCassettes()
function recorded(type: string, user: string, withEnd: boolean | null = null): any[] | any {
  const hit = interactions.find((i) => i.request.type === type && i.request.user === user && (withEnd === null || (i.request.endTime != null) === withEnd))
  if (!hit) throw new Error(`no cassette ${type} ${user}`)
  return JSON.parse(hit.body)
}

async function provider(t: Parameters<typeof withReplayServer>[0], unrecordedUsers: 'not_found' | 'empty_account' = 'not_found') {
  const server = await withReplayServer(t, { unrecordedUsers })
  return { server, provider: new HyperliquidWalletProvider(new HyperliquidInfoClient({ baseUrl: server.baseUrl, timeoutMs: 2000 })) }
}

t.test('snapshot: the recorded clearinghouseState as positions', async (t) => {
  const { provider: p } = await provider(t)
  const raw = recorded('clearinghouseState', STATE_USER)
  const snap = await p.snapshot(STATE_USER.toUpperCase().replace('0X', '0x'))
  t.equal(snap.address, STATE_USER, 'a base address is read as the same venue account, lower-cased')
  t.equal(snap.positions.length, raw.assetPositions.length)
  const btc = snap.positions.find((x) => x.coin === 'BTC')!
  const rawBtc = raw.assetPositions.find((a: any) => a.position.coin === 'BTC').position
  t.equal(btc.size, Number(rawBtc.szi))
  t.ok(btc.size < 0, 'negative szi is a short')
  t.equal(btc.notional_usd, Number(rawBtc.positionValue))
  t.equal(btc.liquidation_price, Number(rawBtc.liquidationPx))
  t.equal(snap.positions.find((x) => x.coin === 'ETH')!.liquidation_price, null, 'a null liquidationPx stays null')
  t.equal(snap.account_value_usd, Number(raw.marginSummary.accountValue))
  t.equal(raw.time, undefined, 'this older recording carries no time')
  t.equal(snap.as_of, snap.received_at, 'so the state is dated when it was received')
  t.equal(snap.provider, 'hyperliquid')
})

t.test('fills, funding and ledger of the recorded wallets', async (t) => {
  const { provider: p } = await provider(t)
  const rawFills = recorded('userFills', FILLS_USER) as any[]
  const { fills, truncated } = await p.fills(FILLS_USER, { start: FILLS_AT - 30 * DAY, end: FILLS_AT })
  t.equal(fills.length, rawFills.length)
  t.equal(truncated, false, '500 recorded fills is below the 2000 cap')
  t.ok(fills.every((f, i) => i === 0 || f.time >= fills[i - 1]!.time), 'ascending')
  t.equal(fills.filter((f) => f.liquidation_of_self).length, 0, 'the recording holds no liquidation')
  const none = await p.fills(FILLS_USER, { start: FILLS_AT + 1, end: FILLS_AT + DAY })
  t.equal(none.fills.length, 0, 'fills outside the window are not returned')

  const rawFunding = recorded('userFunding', FILLS_USER, false) as any[]
  const funding = await p.funding(FILLS_USER, { start: FILLS_AT - 30 * DAY, end: FILLS_AT })
  t.equal(funding.length, rawFunding.length)
  t.equal(funding[0]!.usd, Number(rawFunding[0].delta.usdc))

  const rawLedger = recorded('userNonFundingLedgerUpdates', LEDGER_USER, false) as any[]
  const { transfers, liquidations } = await p.ledger(LEDGER_USER, { start: LEDGER_AT - 30 * DAY, end: LEDGER_AT })
  t.equal(transfers.length, rawLedger.length, 'every ledger row is kept')
  t.equal(liquidations.length, 0)
  t.same(transfers.map((x) => [x.type, x.direction]), [
    ['deposit', 'in'],
    ['accountClassTransfer', 'internal'],
    ['spotTransfer', 'out'],
    ['accountClassTransfer', 'internal'],
    ['deposit', 'in'],
  ])
  const spot = transfers[2]!
  t.equal(spot.usd, 10.5)
  t.equal(spot.token, 'USDC')
  t.equal(spot.counterparty, '0xaaa0c2769cb990f4f37db951a9e48de2385c2733')
  t.equal(spot.fee_usd, 1)
})

t.test('an unvalued transfer is kept with usd null and counted, never dropped or zeroed', async (t) => {
  const raw = (recorded('userNonFundingLedgerUpdates', LEDGER_USER, false) as any[])[2]
  // The recorded spotTransfer with its usdcValue removed: the shape the venue uses for a token it does not value.
  const { usdcValue: _dropped, ...delta } = raw.delta
  const m = mapLedgerUpdate(LEDGER_USER, { time: raw.time, hash: raw.hash, type: 'spotTransfer', delta: { ...delta, amount: 10.5, fee: 1 } })
  t.ok('transfer' in m)
  const tr = (m as { transfer: any }).transfer
  t.equal(tr.usd, null)
  t.equal(tr.direction, 'out')
  const s = flowSummary([tr], raw.time - 1, raw.time)
  t.same(s, { net_usd: 0, inflow_usd: 0, outflow_usd: 0, valued: 0, unvalued: 1, internal: 0 })
})

t.test('features from the recorded fills and funding (0xb7b6…)', async (t) => {
  const { provider: p } = await provider(t, 'empty_account')
  const h = await p.history(FILLS_USER, { start: FILLS_AT - 91 * DAY, end: FILLS_AT })
  t.equal(h.source, 'real')
  const f = computeWalletFeatures(h, FILLS_AT)
  const rawFills = recorded('userFills', FILLS_USER) as any[]
  const rawFunding = recorded('userFunding', FILLS_USER, false) as any[]
  t.equal(f.fills_30d, rawFills.length)
  t.equal(f.active_days_30d, 1, 'the recorded fills span five minutes of one day')
  const pnl = rawFills.reduce((a, x) => a + Number(x.closedPnl) - Number(x.fee), 0)
  t.ok(Math.abs(f.realized_pnl_30d_usd - pnl) < 1e-6)
  const paid = -rawFunding.reduce((a, x) => a + Number(x.delta.usdc), 0)
  t.ok(Math.abs(f.funding_paid_30d_usd - paid) < 1e-6)
  const times = rawFills.map((x) => x.time as number)
  t.equal(f.first_seen_at, Math.min(...times))
  t.equal(f.last_active_at, Math.max(...times))
  t.same(f.sample_adequacy, { adequate: false, fills_30d: 500, active_days_30d: 1, min_fills_30d: 30, min_active_days_30d: MIN_ACTIVE_DAYS_30D, reason: 'too_few_active_days' })
  // Exposure from the fills path (startPosition + signed size): the recorded block of fills ends with every
  // position closed (the last SUI fill sells its whole 731.7 start position), so the wallet is flat afterwards.
  t.equal(f.gross_exposure_usd, 0)
  t.equal(f.direction, 'flat')
  const before = computeWalletFeatures(h, Math.max(...(recorded('userFills', FILLS_USER) as any[]).map((x) => x.time as number)) - 1)
  t.ok(before.gross_exposure_usd > 1000, 'non-zero exposure one millisecond before the closing fills')
  t.equal(f.net_flow_30d.valued + f.net_flow_30d.unvalued, 0, 'no ledger rows recorded for this wallet')
})

t.test('features from the recorded ledger (0x2ba5…): net flow counts deposits and transfers, not internal moves', async (t) => {
  const { provider: p } = await provider(t, 'empty_account')
  const h = await p.history(LEDGER_USER, { start: LEDGER_AT - 91 * DAY, end: LEDGER_AT })
  const f = computeWalletFeatures(h, LEDGER_AT)
  t.ok(Math.abs(f.net_flow_30d.net_usd - (2703997.45 + 1099994.98 - 10.5)) < 1e-6)
  t.equal(f.net_flow_30d.valued, 3)
  t.equal(f.net_flow_30d.internal, 2)
  t.equal(f.net_flow_30d.unvalued, 0)
  t.equal(f.first_seen_at, 1731999196516)
  t.equal(f.last_active_at, 1732867345893)
  t.same(f.counterparties_30d, ['0xaaa0c2769cb990f4f37db951a9e48de2385c2733'])
  t.equal(f.sample_adequacy.adequate, false)
  t.equal(f.sample_adequacy.reason, 'no_activity')
  t.equal(f.direction, 'flat')
})

t.test('provider down: 500, unrecorded account, stopped server and no provider are PROVIDER_DOWN errors', async (t) => {
  const { server, provider: p } = await provider(t)
  server.injectFault('status500', 1, (b) => b.type === 'userFunding')
  const err = await p.history(FILLS_USER, { start: FILLS_AT - DAY, end: FILLS_AT }).catch((e) => e)
  t.ok(err instanceof WalletProviderError)
  t.match(err, { code: 'PROVIDER_DOWN', provider: 'hyperliquid' })
  t.equal(err.reason, 'http_status', 'the history fails as a whole: clearinghouseState is not recorded for this user')
  server.injectFault('status500', 1)
  t.match(await p.snapshot(STATE_USER).catch((e) => e), { code: 'PROVIDER_DOWN', reason: 'http_status', retryable: true })
  await server.close()
  t.match(await p.snapshot(STATE_USER).catch((e) => e), { code: 'PROVIDER_DOWN', reason: 'unreachable', retryable: true })
  const none = new NoWalletProvider()
  t.match(await none.history(STATE_USER, { start: 0, end: 1 }).catch((e) => e), { code: 'PROVIDER_DOWN', reason: 'unwired', provider: 'none', retryable: false })
  await t.rejects(p.snapshot('0x1234'), RangeError, 'a malformed address never reaches the venue')
})
