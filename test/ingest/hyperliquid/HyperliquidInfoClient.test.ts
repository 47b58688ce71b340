/**
 * HyperliquidInfoClient against a real HTTP server on 127.0.0.1 serving the recorded cassettes
 * (../shared/reference/hyperliquid/cassettes, from hyperliquid-python-sdk @ 7ee976d). Expected values below are
 * read off those recordings; the file named beside each check is its source.
 */
import t from 'tap'
import { HyperliquidInfoClient } from '../../../ingest/hyperliquid/HyperliquidInfoClient.ts'
import { HyperliquidError } from '../../../ingest/hyperliquid/HyperliquidError.ts'
import { withReplayServer } from '../../helpers/HyperliquidReplayServer.ts'
import { freePort } from '../../helpers/tmp.ts'

const FILLS_USER = '0xb7b6f3cea3f66bf525f5d8f965f6dbf6d9b017b2'
const STATE_USER = '0x5e9ee1089755c3435139848e47e6635505d5a13a'
const LEDGER_USER = '0x2ba553d9f990a3b66b03b2dc0d030dfc1c061036'

async function rejection(p: Promise<unknown>): Promise<HyperliquidError> {
  try {
    await p
  } catch (err) {
    if (err instanceof HyperliquidError) return err
    throw err
  }
  throw new Error('expected a HyperliquidError')
}

t.test('market data parses from the recordings', async (t) => {
  const server = await withReplayServer(t)
  const client = new HyperliquidInfoClient({ baseUrl: server.baseUrl })

  t.test('allMids (test_get_all_mids.yaml)', async (t) => {
    const before = Date.now()
    const { data, receivedAt } = await client.allMids()
    t.equal(Object.keys(data).length, 28)
    t.equal(data.BTC, 30135.0)
    t.equal(data.ETH, 1903.95)
    t.equal(data.SOL, 26.516)
    t.equal(data.kPEPE, 0.001565)
    t.ok(receivedAt >= before && receivedAt <= Date.now(), 'receivedAt is the local arrival time')
  })

  t.test('l2Book DYDX (test_get_l2_snapshot.yaml)', async (t) => {
    const { data } = await client.l2Book('DYDX')
    t.equal(data.coin, 'DYDX')
    t.equal(data.time, 1689630203930)
    t.equal(data.bids.length, 20)
    t.equal(data.asks.length, 20)
    t.same(data.bids[0], { px: 2.111, sz: 134.4, n: 1 })
    t.same(data.asks[0], { px: 2.1124, sz: 352.3, n: 2 })
    t.same(data.bids[19], { px: 1.81, sz: 2397.0, n: 1 })
    t.same(data.asks[19], { px: 2.1518, sz: 62.0, n: 1 })
    t.same(server.requests.at(-1), { type: 'l2Book', coin: 'DYDX' }, 'request body as the venue expects it')
  })

  t.test('candleSnapshot kPEPE 1h (test_get_candles_snapshot.yaml)', async (t) => {
    const { data } = await client.candleSnapshot('kPEPE', '1h', { startTime: 1684702007000, endTime: 1684784807000 })
    t.equal(data.length, 24)
    t.same(data[0], {
      coin: 'kPEPE',
      interval: '1h',
      openTime: 1684699200000,
      closeTime: 1684702799999,
      open: 0.001601,
      high: 0.001616,
      low: 0.001601,
      close: 0.001604,
      volume: 520665683.0,
      trades: 709,
    })
    t.same(server.requests.at(-1), {
      type: 'candleSnapshot',
      req: { coin: 'kPEPE', interval: '1h', startTime: 1684702007000, endTime: 1684784807000 },
    })
  })

  t.test('fundingHistory BTC paginates 500 at a time and dedupes the boundary (test_get_funding_history[None].yaml)', async (t) => {
    const from = server.requests.length
    const { data } = await client.fundingHistory('BTC', { startTime: 1681923833000 })
    const pages = server.requests.slice(from)
    t.equal(data.length, 1038, 'every recorded row, once')
    t.equal(pages.length, 3, '500 + 500 (first repeats the boundary) + 40')
    t.equal(pages[0]!.startTime, 1681923833000)
    t.equal(pages[1]!.startTime, data[499]!.time, 'next startTime = last returned time')
    t.equal(pages[2]!.startTime, data[998]!.time)
    t.equal(new Set(data.map((r) => r.time)).size, 1038, 'no duplicate times')
    t.ok(data.every((r, i) => i === 0 || r.time > data[i - 1]!.time), 'ascending')
    t.same(data[0], { coin: 'BTC', time: 1683849600048, fundingRate: -0.00061334, premium: -0.00091334 })
    t.same(data.at(-1), { coin: 'BTC', time: 1689627600065, fundingRate: 0.0000125, premium: 0.00007028 })
  })

  t.test('fundingHistory with endTime (test_get_funding_history[1684811870000].yaml)', async (t) => {
    const from = server.requests.length
    const { data } = await client.fundingHistory('BTC', { startTime: 1681923833000, endTime: 1684811870000 })
    t.equal(data.length, 34)
    t.equal(server.requests.length - from, 1, 'a short page ends the range')
    t.equal(server.requests.at(-1)!.endTime, 1684811870000)
    t.ok(data.every((r) => r.time <= 1684811870000))
  })

  t.test('metaAndAssetCtxs (constructed payload: real BTC ctx quoted in hyperliquid-api.md)', async (t) => {
    const { data } = await client.metaAndAssetCtxs()
    t.equal(data.markets.length, 29)
    const btc = data.markets.find((m) => m.meta.name === 'BTC')!
    t.same(btc.meta, { name: 'BTC', szDecimals: 5, maxLeverage: 50, isDelisted: false, onlyIsolated: false })
    t.same(btc.ctx, {
      funding: -0.0000015186,
      openInterest: 27353.17682,
      oraclePx: 77605.0,
      markPx: 77562.0,
      midPx: 77558.5,
      premium: -0.0005927453,
      prevDayPx: 76317.0,
      dayNtlVlm: 1516669192.1953897476,
      dayBaseVlm: 19707.77457,
      impactPxs: [77558.0, 77559.0],
    })
    const loom = data.markets.find((m) => m.meta.name === 'LOOM')!
    t.equal(loom.meta.isDelisted, true, 'isDelisted read when present')
    t.equal(loom.meta.onlyIsolated, true)
    t.equal(loom.ctx!.midPx, null, 'inactive market: null midPx')
    t.equal(loom.ctx!.premium, null)
    t.equal(loom.ctx!.impactPxs, null)
  })

  t.test('predictedFundings (constructed from quoted examples)', async (t) => {
    const { data } = await client.predictedFundings()
    const btc = data.find((p) => p.coin === 'BTC')!
    t.same(
      btc.venues.map((v) => v.venue),
      ['BinPerp', 'HlPerp'],
      'a null venue entry is dropped',
    )
    t.same(btc.venues[1], { venue: 'HlPerp', fundingRate: 0.0000125, nextFundingTime: 1754470800000, fundingIntervalHours: 1 })
    const avax = data.find((p) => p.coin === 'AVAX')!
    t.equal(avax.venues[1]!.fundingIntervalHours, null, 'older shape without fundingIntervalHours')
  })
})

t.test('wallet data parses from the recordings', async (t) => {
  const server = await withReplayServer(t)
  const client = new HyperliquidInfoClient({ baseUrl: server.baseUrl })

  t.test('clearinghouseState (test_get_user_state.yaml)', async (t) => {
    const { data } = await client.clearinghouseState(STATE_USER)
    const btc = data.positions.find((p) => p.coin === 'BTC')!
    t.equal(btc.szi, -0.00785, 'short: negative szi')
    t.equal(btc.entryPx, 26951.0)
    t.equal(btc.liquidationPx, 173198.69592357)
    t.same(btc.leverage, { type: 'cross', value: 20, rawUsd: null })
    t.equal(btc.cumFunding, null, 'old recording: no cumFunding')
    t.equal(data.positions.find((p) => p.coin === 'ETH')!.liquidationPx, null, 'null liquidationPx kept as null')
    t.same(data.marginSummary, { accountValue: 1182.312496, totalMarginUsed: 171.740766, totalNtlPos: 3434.815334, totalRawUsd: 86.549602 })
    t.equal(data.withdrawable, 1010.57173)
    t.equal(data.time, null)
  })

  t.test('userFills (test_get_user_fills.yaml)', async (t) => {
    const { data } = await client.userFills(FILLS_USER)
    t.equal(data.length, 500)
    t.same(data[0], {
      coin: 'SUI',
      px: 1.3189,
      sz: 142.7,
      side: 'A',
      time: 1683245884863,
      startPosition: 4623.5,
      dir: 'Close Long',
      closedPnl: -0.25686,
      hash: '0x3d4770d0527317ef77c404017559cb0103000b34010cc95e97b437cbc3b6087a',
      oid: 189324432,
      crossed: true,
      fee: 0,
      feeToken: null,
      builderFee: null,
      tid: null,
      liquidation: null,
    })
  })

  t.test('userFunding (test_user_funding_history_{with,without}_end_time.yaml)', async (t) => {
    const all = await client.userFunding(FILLS_USER, { startTime: 1681923833000 })
    t.equal(all.data.length, 218)
    const bounded = await client.userFunding(FILLS_USER, { startTime: 1681923833000, endTime: 1682010233000 })
    t.equal(bounded.data.length, 13)
    t.same(bounded.data[0], {
      time: 1681948800000,
      hash: '0xe3f4c682738ae2ee62510a7282db05c55f1b2032b6a366be9af99d6c809ac899',
      coin: 'APE',
      usdc: 0.145796,
      szi: 40.13333333,
      fundingRate: -0.00029319,
      nSamples: 3,
    })
  })

  t.test('userNonFundingLedgerUpdates (test_user_non_funding_ledger_updates_*.yaml)', async (t) => {
    const { data } = await client.userNonFundingLedgerUpdates(LEDGER_USER, { startTime: 1681923833000 })
    t.equal(data.length, 5)
    t.same(
      data.slice(0, 3).map((u) => u.type),
      ['deposit', 'accountClassTransfer', 'spotTransfer'],
    )
    t.equal(data[0]!.delta.usdc, 2703997.4500000002)
    t.equal(data[1]!.delta.toPerp, false, 'non-decimal fields kept as sent')
    t.equal(data[2]!.delta.amount, 10.5)
    t.equal(data[2]!.delta.nonce, null)
    const empty = await client.userNonFundingLedgerUpdates(LEDGER_USER, { startTime: 1681923833000, endTime: 1682010233000 })
    t.same(empty.data, [])
  })
})

t.test('failures are typed', async (t) => {
  const server = await withReplayServer(t)
  const client = new HyperliquidInfoClient({ baseUrl: server.baseUrl, timeoutMs: 400 })

  t.test('HTTP 500 → HL_HTTP_STATUS, retryable', async (t) => {
    server.injectFault('status500')
    const err = await rejection(client.allMids())
    t.equal(err.code, 'HL_HTTP_STATUS')
    t.equal(err.status, 500)
    t.equal(err.retryable, true)
    t.equal(err.request, 'allMids')
    t.equal((await client.allMids()).data.BTC, 30135, 'the next call succeeds')
  })

  t.test('HTTP 429 → retryable; other 4xx → not', async (t) => {
    server.injectFault('status429')
    const limited = await rejection(client.allMids())
    t.match(limited, { code: 'HL_HTTP_STATUS', status: 429, retryable: true })
    const unknown = await rejection(client.clearinghouseState('0x0000000000000000000000000000000000000001'))
    t.match(unknown, { code: 'HL_HTTP_STATUS', status: 404, retryable: false })
  })

  t.test('server hangs → HL_TIMEOUT, retryable', async (t) => {
    server.injectFault('hang')
    const started = Date.now()
    const err = await rejection(client.l2Book('DYDX'))
    t.equal(err.code, 'HL_TIMEOUT')
    t.equal(err.retryable, true)
    t.ok(Date.now() - started >= 350, 'waited for the timeout')
  })

  t.test('garbage body → HL_BAD_RESPONSE, not retryable', async (t) => {
    server.injectFault('garbage')
    const err = await rejection(client.metaAndAssetCtxs())
    t.equal(err.code, 'HL_BAD_RESPONSE')
    t.equal(err.retryable, false)
    t.match(err.message, /not JSON/)
  })

  t.test('truncated JSON → HL_BAD_RESPONSE', async (t) => {
    server.injectFault('truncated')
    t.equal((await rejection(client.allMids())).code, 'HL_BAD_RESPONSE')
  })

  t.test('wrong shape → HL_BAD_RESPONSE naming the path', async (t) => {
    // The server answers `null` for a book it has no data for; a book must be an object.
    const err = await rejection(client.l2Book('NOSUCHCOIN'))
    t.equal(err.code, 'HL_BAD_RESPONSE')
    t.equal(err.path, '')
    t.equal(err.request, 'l2Book')
  })

  t.test('a failed page fails the whole range (no silent partial history)', async (t) => {
    server.injectFault('status500', 1, (body) => body.type === 'fundingHistory' && body.startTime !== 1681923833000)
    const from = server.requests.length
    const err = await rejection(client.fundingHistory('BTC', { startTime: 1681923833000 }))
    t.equal(err.code, 'HL_HTTP_STATUS')
    t.equal(server.requests.length - from, 2, 'the first page succeeded, the second failed')
  })

  t.test('nothing listening → HL_UNREACHABLE, retryable', async (t) => {
    const port = await freePort()
    const err = await rejection(new HyperliquidInfoClient({ baseUrl: `http://127.0.0.1:${port}` }).allMids())
    t.equal(err.code, 'HL_UNREACHABLE')
    t.equal(err.retryable, true)
  })
})

t.test('options are validated once, naming the field', async (t) => {
  t.throws(() => new HyperliquidInfoClient({ timeoutMs: 0 }), /HyperliquidInfoClient options\/timeoutMs/)
  t.throws(() => new HyperliquidInfoClient({ baseUrl: 'ftp://x' }), /options\/baseUrl/)
  t.throws(() => new HyperliquidInfoClient({ bogus: 1 } as never), /options\/bogus/)
  t.equal(new HyperliquidInfoClient().baseUrl, 'https://api.hyperliquid.xyz')
  t.equal(new HyperliquidInfoClient({ baseUrl: 'http://127.0.0.1:1/' }).baseUrl, 'http://127.0.0.1:1')
})
