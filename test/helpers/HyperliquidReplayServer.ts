/**
 * A real Hyperliquid stand-in on 127.0.0.1 for adapter tests: HTTP `POST /info` answered from the recorded VCR
 * cassettes in ../shared/reference/hyperliquid/cassettes, and a websocket at `/ws` on the same port.
 *
 * What is recorded and what is constructed (kept apart on purpose):
 * - Recorded: every /info answer for a request type that has a cassette (allMids, l2Book DYDX, candleSnapshot kPEPE,
 *   fundingHistory BTC, clearinghouseState, userFills, userFunding, userNonFundingLedgerUpdates, …). Time-range
 *   types are served the way the live API serves them: rows with startTime ≤ time ≤ endTime, at most `pageLimit`
 *   (500) per response, so a client must paginate (the BTC cassette was recorded before the cap and holds 1038 rows).
 * - Constructed, because no cassette exists: metaAndAssetCtxs and predictedFundings (see CONSTRUCTED_* below, built
 *   from payloads quoted in hyperliquid-api.md and the GitBook pages), l2Book for coins other than DYDX (the DYDX
 *   recording rescaled), and every websocket message (there are no websocket recordings: messages are built in the
 *   documented WsBook / WsTrade / WsActiveAssetCtx shapes from the recorded REST data, restamped to the current time
 *   because a live feed carries current times).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Socket } from 'node:net'
import { parse as parseYaml } from 'yaml'
import { WebSocketServer, type WebSocket } from 'ws'
import { SHARED_DIR } from './tmp.ts'

export const CASSETTE_DIR = join(SHARED_DIR, 'reference/hyperliquid/cassettes')

export interface RecordedInteraction {
  file: string
  request: Record<string, unknown>
  status: number
  body: string
}

/** Loads every interaction whose YAML parses; files that were trimmed upstream into invalid YAML are listed as skipped. */
export function loadCassettes(dir = CASSETTE_DIR): { interactions: RecordedInteraction[]; skipped: Array<{ file: string; reason: string }> } {
  const interactions: RecordedInteraction[] = []
  const skipped: Array<{ file: string; reason: string }> = []
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort()) {
    let doc: { interactions?: Array<{ request?: { body?: string }; response?: { status?: { code?: number }; body?: { string?: string } } }> }
    try {
      doc = parseYaml(readFileSync(join(dir, file), 'utf8')) as typeof doc
    } catch (err) {
      skipped.push({ file, reason: (err as Error).message.split('\n')[0] ?? 'unparseable' })
      continue
    }
    for (const it of doc.interactions ?? []) {
      const body = it.response?.body?.string
      const reqBody = it.request?.body
      if (typeof body !== 'string' || typeof reqBody !== 'string') continue
      interactions.push({ file, request: JSON.parse(reqBody) as Record<string, unknown>, status: it.response?.status?.code ?? 200, body })
    }
  }
  return { interactions, skipped }
}

/**
 * hyperliquid-api.md §2 quotes this BTC context as a real response ("Real BTC ctx"); used verbatim.
 */
export const RECORDED_BTC_CTX = {
  funding: '-0.0000015186',
  openInterest: '27353.17682',
  prevDayPx: '76317.0',
  dayNtlVlm: '1516669192.1953897476',
  premium: '-0.0005927453',
  oraclePx: '77605.0',
  markPx: '77562.0',
  midPx: '77558.5',
  impactPxs: ['77558.0', '77559.0'],
  dayBaseVlm: '19707.77457',
}

/**
 * CONSTRUCTED metaAndAssetCtxs (no cassette exists). Universe: the recorded `meta` response (test_get_info.yaml,
 * 28 perps) plus the delisted LOOM entry quoted in hyperliquid-api.md §2 `meta`. Contexts: BTC is the real quoted
 * ctx; LOOM has the documented delisted/idle shape ("funding":"0.0","openInterest":"0.0", null premium, midPx and
 * impactPxs; its other numbers are placeholders); every other coin is synthesized around its recorded allMids price
 * (test_get_all_mids.yaml) with the neutral hourly rate 0.0000125 and a placeholder open interest of 1000.
 */
function constructMetaAndAssetCtxs(all: RecordedInteraction[]): unknown {
  const meta = JSON.parse(findRecorded(all, 'meta').body) as { universe: Array<Record<string, unknown>> }
  const mids = JSON.parse(findRecorded(all, 'allMids').body) as Record<string, string>
  const universe = [
    ...meta.universe,
    { name: 'LOOM', szDecimals: 1, maxLeverage: 3, isDelisted: true, marginMode: 'strictIsolated', onlyIsolated: true },
  ]
  const ctxs = universe.map((u) => {
    const name = String(u.name)
    if (name === 'BTC') return RECORDED_BTC_CTX
    if (name === 'LOOM') {
      return { funding: '0.0', openInterest: '0.0', prevDayPx: '0.0', dayNtlVlm: '0.0', premium: null, oraclePx: '0.0', markPx: '0.0', midPx: null, impactPxs: null, dayBaseVlm: '0.0' }
    }
    const mid = mids[name] ?? '1.0'
    return { funding: '0.0000125', openInterest: '1000.0', prevDayPx: mid, dayNtlVlm: '0.0', premium: '0.0', oraclePx: mid, markPx: mid, midPx: mid, impactPxs: [mid, mid], dayBaseVlm: '0.0' }
  })
  return [{ universe, marginTables: [], collateralToken: 0 }, ctxs]
}

/**
 * CONSTRUCTED predictedFundings: the BTC entry quoted in hyperliquid-api.md §2 (its BybitPerp entry is elided in the
 * quote, so it is served as null, which the reference says venue entries can be) and the AVAX entry quoted in the
 * GitBook perpetuals page (older shape, no fundingIntervalHours).
 */
const CONSTRUCTED_PREDICTED_FUNDINGS = [
  [
    'BTC',
    [
      ['BinPerp', { fundingRate: '0.00008786', nextFundingTime: 1754496000000, fundingIntervalHours: 8 }],
      ['HlPerp', { fundingRate: '0.0000125', nextFundingTime: 1754470800000, fundingIntervalHours: 1 }],
      ['BybitPerp', null],
    ],
  ],
  [
    'AVAX',
    [
      ['BinPerp', { fundingRate: '0.0001', nextFundingTime: 1733961600000 }],
      ['HlPerp', { fundingRate: '0.0000125', nextFundingTime: 1733958000000 }],
      ['BybitPerp', { fundingRate: '0.0001', nextFundingTime: 1733961600000 }],
    ],
  ],
]

function findRecorded(all: RecordedInteraction[], type: string, match: Record<string, unknown> = {}): RecordedInteraction {
  const hit = all.find((i) => i.request.type === type && Object.entries(match).every(([k, v]) => i.request[k] === v))
  if (!hit) throw new Error(`no cassette for ${type} ${JSON.stringify(match)}`)
  return hit
}

const RANGE_TYPES = new Set(['fundingHistory', 'userFunding', 'userNonFundingLedgerUpdates', 'userFillsByTime'])

export type ReplayFault = 'status500' | 'status429' | 'hang' | 'garbage' | 'truncated'

export interface HyperliquidReplayServerOptions {
  cassetteDir?: string
  /** Rows per time-range response. Default 500, as the live API. */
  pageLimit?: number
  /** Period of websocket data messages per subscription. Default 100 ms. */
  wsIntervalMs?: number
  /**
   * A user-keyed request (clearinghouseState, userFills) for an address without a recording: 'not_found' (default)
   * answers 404; 'empty_account' answers as the live API answers an address with no venue history — CONSTRUCTED:
   * clearinghouseState with no positions and zero summaries (time = now), userFills []. Time-range types already
   * answer [] for such an address.
   */
  unrecordedUsers?: 'not_found' | 'empty_account'
}

const ZERO_SUMMARY = { accountValue: '0.0', totalMarginUsed: '0.0', totalNtlPos: '0.0', totalRawUsd: '0.0' }

interface WsClient {
  id: number
  socket: WebSocket
  subscriptions: Array<Record<string, unknown>>
}

export class HyperliquidReplayServer {
  readonly baseUrl: string
  readonly wsUrl: string
  readonly skippedCassettes: ReadonlyArray<{ file: string; reason: string }>
  /** Every /info request body received, in order. */
  readonly requests: Array<Record<string, unknown>> = []
  /** Every websocket subscribe received: connection number (1-based) and subscription. */
  readonly wsSubscriptions: Array<{ connection: number; subscription: Record<string, unknown> }> = []
  wsConnections = 0
  wsPings = 0
  /** When false, subscriptions are acknowledged but no data is streamed (a quiet feed). */
  wsStreaming = true
  /** When false, pings go unanswered (a dead feed). */
  wsAnswerPings = true

  readonly #http: Server
  readonly #wss: WebSocketServer
  readonly #interactions: RecordedInteraction[]
  readonly #pageLimit: number
  readonly #unrecordedUsers: 'not_found' | 'empty_account'
  readonly #faults: Array<{ fault: ReplayFault; when: (body: Record<string, unknown>) => boolean }> = []
  readonly #clients = new Set<WsClient>()
  readonly #sockets = new Set<Socket>()
  readonly #metaAndAssetCtxs: unknown
  readonly #ctxByCoin = new Map<string, Record<string, unknown>>()
  readonly #fills: Array<Record<string, unknown>>
  readonly #fillsUser: string
  readonly #fillCursor = new Map<string, number>()
  readonly #ticker: NodeJS.Timeout

  private constructor(http: Server, wss: WebSocketServer, port: number, o: HyperliquidReplayServerOptions) {
    this.#http = http
    this.#wss = wss
    this.baseUrl = `http://127.0.0.1:${port}`
    this.wsUrl = `ws://127.0.0.1:${port}/ws`
    const { interactions, skipped } = loadCassettes(o.cassetteDir)
    this.#interactions = interactions
    this.skippedCassettes = skipped
    this.#pageLimit = o.pageLimit ?? 500
    this.#unrecordedUsers = o.unrecordedUsers ?? 'not_found'
    this.#metaAndAssetCtxs = constructMetaAndAssetCtxs(interactions)
    const [meta, ctxs] = this.#metaAndAssetCtxs as [{ universe: Array<{ name: string }> }, Array<Record<string, unknown>>]
    meta.universe.forEach((u, i) => this.#ctxByCoin.set(u.name, ctxs[i]!))
    const fills = findRecorded(interactions, 'userFills')
    this.#fills = JSON.parse(fills.body) as Array<Record<string, unknown>>
    this.#fillsUser = String(fills.request.user)
    this.#ticker = setInterval(() => this.#streamTick(), o.wsIntervalMs ?? 100)
  }

  static async start(options: HyperliquidReplayServerOptions = {}): Promise<HyperliquidReplayServer> {
    const http = createServer()
    const wss = new WebSocketServer({ server: http, path: '/ws' })
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject)
      http.listen(0, '127.0.0.1', () => resolve())
    })
    const addr = http.address()
    if (!addr || typeof addr !== 'object') throw new Error('replay server has no port')
    const server = new HyperliquidReplayServer(http, wss, addr.port, options)
    http.on('connection', (s: Socket) => {
      server.#sockets.add(s)
      s.on('close', () => server.#sockets.delete(s))
    })
    http.on('request', (req, res) => server.#onRequest(req, res))
    wss.on('connection', (ws) => server.#onWsConnection(ws))
    return server
  }

  /** The next `count` /info requests (those matching `when`, if given) fail this way, in order of injection. */
  injectFault(fault: ReplayFault, count = 1, when: (body: Record<string, unknown>) => boolean = () => true): void {
    for (let i = 0; i < count; i++) this.#faults.push({ fault, when })
  }

  /** Drops every websocket connection abruptly (no close frame), as a network failure would. */
  dropWsConnections(): number {
    const n = this.#clients.size
    for (const c of this.#clients) c.socket.terminate()
    return n
  }

  get openWsConnections(): number {
    return this.#clients.size
  }

  async close(): Promise<void> {
    clearInterval(this.#ticker)
    for (const c of this.#clients) c.socket.terminate()
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()))
    for (const s of this.#sockets) s.destroy()
    await new Promise<void>((resolve) => this.#http.close(() => resolve()))
  }

  // ---------- HTTP ----------

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/info') return this.#send(res, 404, 'text/plain', 'not found')
      let body: Record<string, unknown>
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>
      } catch {
        return this.#send(res, 422, 'text/plain', 'Failed to deserialize the JSON body into the target type')
      }
      this.requests.push(body)
      const at = this.#faults.findIndex((f) => f.when(body))
      const fault = at < 0 ? undefined : this.#faults.splice(at, 1)[0]!.fault
      if (fault === 'hang') return // never answered; the socket is destroyed on close()
      if (fault === 'status500') return this.#send(res, 500, 'text/plain', 'Internal Server Error')
      if (fault === 'status429') return this.#send(res, 429, 'text/plain', 'Too Many Requests')
      if (fault === 'garbage') return this.#send(res, 200, 'text/html', '<html><body>502 Bad Gateway</body></html>')
      const answer = this.#answer(body)
      if (fault === 'truncated') return this.#send(res, 200, 'application/json', answer.body.slice(0, Math.floor(answer.body.length / 2)))
      this.#send(res, answer.status, answer.status === 200 ? 'application/json' : 'text/plain', answer.body)
    })
  }

  #send(res: ServerResponse, status: number, type: string, body: string): void {
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) })
    res.end(body)
  }

  #answer(body: Record<string, unknown>): { status: number; body: string } {
    const type = body.type
    if (type === 'metaAndAssetCtxs') return { status: 200, body: JSON.stringify(this.#metaAndAssetCtxs) }
    if (type === 'predictedFundings') return { status: 200, body: JSON.stringify(CONSTRUCTED_PREDICTED_FUNDINGS) }
    if (typeof type === 'string' && RANGE_TYPES.has(type)) return { status: 200, body: JSON.stringify(this.#rangeRows(body)) }
    if (type === 'candleSnapshot') {
      const req = (body.req ?? {}) as Record<string, unknown>
      const rows = this.#interactions
        .filter((i) => i.request.type === 'candleSnapshot')
        .filter((i) => {
          const r = i.request.req as Record<string, unknown>
          return r.coin === req.coin && r.interval === req.interval
        })
        .flatMap((i) => JSON.parse(i.body) as Array<{ t: number; T: number }>)
        // As recorded: the venue includes the candle that contains startTime (kPEPE: t 1684699200000 < startTime).
        .filter((c) => c.T >= Number(req.startTime) && c.t <= Number(req.endTime))
      return { status: 200, body: JSON.stringify(rows) }
    }
    if (type === 'l2Book') {
      const recorded = this.#interactions.find((i) => i.request.type === 'l2Book' && i.request.coin === body.coin)
      if (recorded) return { status: recorded.status, body: recorded.body }
      const book = this.#constructBook(String(body.coin))
      return book ? { status: 200, body: JSON.stringify(book) } : { status: 200, body: 'null' }
    }
    const keys = ['coin', 'user'] as const
    const recorded = this.#interactions.find((i) => i.request.type === type && keys.every((k) => i.request[k] === body[k]))
    if (recorded) return { status: recorded.status, body: recorded.body }
    if (this.#unrecordedUsers === 'empty_account' && typeof body.user === 'string') {
      if (type === 'clearinghouseState') {
        const empty = { assetPositions: [], crossMaintenanceMarginUsed: '0.0', crossMarginSummary: ZERO_SUMMARY, marginSummary: ZERO_SUMMARY, time: Date.now(), withdrawable: '0.0' }
        return { status: 200, body: JSON.stringify(empty) }
      }
      if (type === 'userFills') return { status: 200, body: '[]' }
    }
    return { status: 404, body: `replay: no recorded response for ${JSON.stringify(body)}` }
  }

  /** Live-API semantics over the union of recordings: startTime ≤ time ≤ endTime, ascending, ≤ pageLimit rows. */
  #rangeRows(body: Record<string, unknown>): unknown[] {
    const same = (i: RecordedInteraction) =>
      i.request.type === body.type && (body.coin === undefined || i.request.coin === body.coin) && (body.user === undefined || i.request.user === body.user)
    const seen = new Set<string>()
    const rows: Array<{ time: number }> = []
    for (const i of this.#interactions.filter(same)) {
      for (const row of JSON.parse(i.body) as Array<{ time: number }>) {
        const key = JSON.stringify(row)
        if (seen.has(key)) continue
        seen.add(key)
        rows.push(row)
      }
    }
    const start = Number(body.startTime ?? 0)
    const end = body.endTime === undefined || body.endTime === null ? Infinity : Number(body.endTime)
    return rows
      .filter((r) => r.time >= start && r.time <= end)
      .sort((a, b) => a.time - b.time)
      .slice(0, this.#pageLimit)
  }

  /**
   * CONSTRUCTED book for a coin without a recording: the recorded DYDX levels (test_get_l2_snapshot.yaml) rescaled
   * so the mid sits at the coin's (constructed) midPx, sizes scaled inversely so USD depth is unchanged, time = now.
   */
  #constructBook(coin: string): unknown {
    const ctx = this.#ctxByCoin.get(coin)
    const mid = Number(ctx?.midPx ?? ctx?.markPx)
    if (!ctx || !Number.isFinite(mid) || mid <= 0) return null
    const dydx = JSON.parse(findRecorded(this.#interactions, 'l2Book', { coin: 'DYDX' }).body) as {
      levels: Array<Array<{ px: string; sz: string; n: number }>>
    }
    const [bids, asks] = dydx.levels as [Array<{ px: string; sz: string; n: number }>, Array<{ px: string; sz: string; n: number }>]
    const dydxMid = (Number(bids[0]!.px) + Number(asks[0]!.px)) / 2
    const k = mid / dydxMid
    const scale = (l: { px: string; sz: string; n: number }) => ({
      px: String(Number((Number(l.px) * k).toPrecision(6))),
      sz: String(Number((Number(l.sz) / k).toFixed(5))),
      n: l.n,
    })
    return { coin, time: Date.now(), levels: [bids.map(scale), asks.map(scale)] }
  }

  // ---------- websocket ----------

  #onWsConnection(socket: WebSocket): void {
    const client: WsClient = { id: ++this.wsConnections, socket, subscriptions: [] }
    this.#clients.add(client)
    socket.on('close', () => this.#clients.delete(client))
    socket.on('error', () => this.#clients.delete(client))
    socket.on('message', (raw) => {
      let msg: { method?: string; subscription?: Record<string, unknown> }
      try {
        msg = JSON.parse(raw.toString()) as typeof msg
      } catch {
        socket.send(JSON.stringify({ channel: 'error', data: `Invalid message: ${raw.toString().slice(0, 80)}` }))
        return
      }
      if (msg.method === 'ping') {
        this.wsPings++
        if (this.wsAnswerPings) socket.send(JSON.stringify({ channel: 'pong' }))
        return
      }
      if (msg.method === 'subscribe' && msg.subscription) {
        client.subscriptions.push(msg.subscription)
        this.wsSubscriptions.push({ connection: client.id, subscription: msg.subscription })
        socket.send(JSON.stringify({ channel: 'subscriptionResponse', data: { method: 'subscribe', subscription: msg.subscription } }))
        return
      }
      socket.send(JSON.stringify({ channel: 'error', data: `Unknown method: ${String(msg.method)}` }))
    })
  }

  #streamTick(): void {
    if (!this.wsStreaming) return
    for (const client of this.#clients) {
      if (client.socket.readyState !== client.socket.OPEN) continue
      for (const sub of client.subscriptions) {
        const msg = this.#wsMessage(sub)
        if (msg) client.socket.send(JSON.stringify(msg))
      }
    }
  }

  /** CONSTRUCTED websocket messages in the documented shapes (see the file header). */
  #wsMessage(sub: Record<string, unknown>): unknown {
    const coin = String(sub.coin)
    switch (sub.type) {
      case 'l2Book': {
        const recorded = this.#interactions.find((i) => i.request.type === 'l2Book' && i.request.coin === coin)
        const book = recorded ? { ...(JSON.parse(recorded.body) as object), time: Date.now() } : this.#constructBook(coin)
        return book ? { channel: 'l2Book', data: book } : null
      }
      case 'activeAssetCtx': {
        const ctx = this.#ctxByCoin.get(coin)
        return ctx ? { channel: 'activeAssetCtx', data: { coin, ctx } } : null
      }
      case 'trades': {
        // The recorded fills of this coin (test_get_user_fills.yaml), replayed one per message as WsTrade.
        const fills = this.#fills.filter((f) => f.coin === coin)
        if (fills.length === 0) return null
        const at = (this.#fillCursor.get(coin) ?? 0) % fills.length
        this.#fillCursor.set(coin, at + 1)
        const f = fills[at]!
        const buyer = f.side === 'B' ? this.#fillsUser : '0x0000000000000000000000000000000000000000'
        const seller = f.side === 'B' ? '0x0000000000000000000000000000000000000000' : this.#fillsUser
        return {
          channel: 'trades',
          data: [{ coin, side: f.side, px: f.px, sz: f.sz, hash: f.hash, time: Date.now(), tid: Number(f.oid) * 1000 + at, users: [buyer, seller] }],
        }
      }
      default:
        return null
    }
  }
}

/** Starts a replay server closed at the end of the test. */
export async function withReplayServer(
  t: { teardown(fn: () => unknown): void },
  options: HyperliquidReplayServerOptions = {},
): Promise<HyperliquidReplayServer> {
  const server = await HyperliquidReplayServer.start(options)
  t.teardown(() => server.close())
  return server
}
