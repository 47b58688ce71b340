/**
 * Walks EVERY route of the registry over real HTTP and checks status and body against the registry's own schemas:
 * free routes answer 200 with {data, meta} matching the data schema; paid routes answer 402 PAYMENT_REQUIRED with a
 * decodable x402 v2 PAYMENT-REQUIRED header priced from the price table; with no parts wired, every route that needs
 * one answers 503 PROVIDER_DOWN naming it.
 */
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Server } from '../../serving/Server.ts'
import { signIn, signInHeader, withProof } from '../helpers/serving/signIn.ts'
import { decisionIdOf } from '../../engine/identity.ts'
import t from 'tap'
import { createECDH, randomBytes } from 'node:crypto'
import { ROUTES } from '../../serving/routes/registry.ts'
import { concretePaidPaths, pricingKeyFor, routeErrors } from '../../serving/routes/derive.ts'
import type { RouteDef } from '../../serving/routes/types.ts'
import { ERROR_ENVELOPE_SCHEMA, envelopeSchema } from '../../serving/envelope.ts'
import { priceOf } from '../../product/billing/pricing.ts'
import { decodeHeader, type PaymentRequired, USDC_BASE } from '../../serving/payments/x402.ts'
import { memoryServices, PAYER, PENDING_ID, RELEASE_VERSION, RESOLVED_ID } from '../helpers/serving/memoryServices.ts'
import { withDelivery } from '../helpers/serving/delivery.ts'
import { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import { makeAjv, PAY_TO, withServer } from '../helpers/serving/server.ts'
import { OPS_TOKEN, withBilling } from '../helpers/serving/billing.ts'
import { withArena } from '../helpers/serving/arena.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { EmbeddedLog } from '../../pipeline/log/EmbeddedLog.ts'
import { DecisionLedger } from '../../engine/DecisionLedger.ts'
import { LedgerStreams } from '../../engine/LedgerStreams.ts'
import { publicIdOf } from '../../product/arena/handles.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import { computeFunnel } from '../../product/funnel/computeFunnel.ts'
import type { FunnelReads } from '../../product/funnel/FunnelService.ts'

const ADMIN_KEY = 'walker-admin-key'

/** The funnel part in memory: one snapshot of an empty history, the admin key checked like the real one. */
function memoryFunnel(at: string): FunnelReads {
  const { steps, window_calls, xp_by_kind, activation } = computeFunnel({ ledger: null, draws: null, calls: null, arena: null })
  return {
    requireAdmin: (key) => {
      if (key !== ADMIN_KEY) throw new ServiceError('OPS_FORBIDDEN', { detail: { reason: 'ADMIN_KEY_REJECTED' } })
    },
    report: async (limit) => ({
      funnel: { at, window_calls, xp_by_kind, steps },
      activation,
      trend: [{ at, window_calls, xp_by_kind, steps, activation }],
      window: { limit, snapshots: 1, newest_at: at, oldest_at: at },
    }),
  }
}

/** An endpoint registered before the walk, so its owner-only DELETE has something to pause. */
const WALKER_ENDPOINT = 'he_' + 'ab'.repeat(16)

const ajv = makeAjv()
const errorEnvelope = ajv.compile(ERROR_ENVELOPE_SCHEMA)

const PARAM_EXAMPLES: Record<string, string> = {
  decision_id: RESOLVED_ID,
  asset: 'BTC',
  chain: 'base',
  address: PAYER,
  pack_id: 'booster_150k',
  plan_id: 'operator',
  version: RELEASE_VERSION,
  public_id: publicIdOf(PAYER),
}

const candidate = {
  tx_hash: '0x' + 'ab'.repeat(32), log_index: 3, block_time: '2026-01-05T11:00:00.000Z', direction: 'in',
  asset: 'USDC', amount: 1500, usd_value: 1500, counterparty: null,
}
const risk = { asset: 'BTC', address: PAYER, candidate }

/** Valid requests for routes that need a query, body or header; the walker fails if a route needs one and has none. */
const RECEIPT_BODY = { question_id: 'S01_market_regime', asset: 'BTC', subject: null, input_hash: 'a'.repeat(64), policy_version: 'policy-3.0.0' }

const CASES: Record<string, { query?: string; body?: unknown; headers?: Record<string, string>; params?: Record<string, string> }> = {
  'liq.hours': { query: 'asset=BTC' },
  'decisions.latest': { query: 'question_id=S01_market_regime&asset=BTC' },
  'decisions.replay': { body: {} },
  'lineage.get': { params: { decision_id: RESOLVED_ID.slice(0, 8) } },
  feed: { query: 'limit=10' },
  universe: { query: 'limit=2' },
  'decisions.create': { body: { asset: 'BTC', question_id: 'S01_market_regime' } },
  'decisions.next': { body: { previous_decision_id: RESOLVED_ID } },
  'hooks.create': { body: { decision_id: PENDING_ID, url: 'https://hooks.example.com/x' } },
  'hook_endpoints.create': { body: { url: 'https://hooks.example.com/new' }, headers: { 'x-svc-payer': PAYER } },
  'hook_endpoints.list': { headers: { 'x-svc-payer': PAYER } },
  'hook_endpoints.delete': { headers: { 'x-svc-payer': PAYER }, params: { endpoint_id: WALKER_ENDPOINT } },
  'push.register': { body: { subscription: { endpoint: 'https://push.example.com/send/abc', keys: { p256dh: createECDH('prime256v1').generateKeys('base64url'), auth: randomBytes(16).toString('base64url') } } }, headers: { 'x-svc-payer': PAYER } },
  'push.list': { headers: { 'x-svc-payer': PAYER } },
  'push.delete': { headers: { 'x-svc-payer': PAYER }, params: { device_id: 'pd_' + '0'.repeat(24) } },
  'follows.set': { body: { question_id: 'S05_volatility_expansion', subject_kind: 'asset', subject: 'BTC', channels: 1 }, headers: { 'x-svc-payer': PAYER } },
  'follows.list': { headers: { 'x-svc-payer': PAYER } },
  'follows.delete': { headers: { 'x-svc-payer': PAYER }, params: { follow_id: 'fl_' + '0'.repeat(24) } },
  'alerts.create': { body: { kind: 'probability', subject_kind: 'asset', subject: 'BTC', threshold: 0.6 }, headers: { 'x-svc-payer': PAYER } },
  'alerts.list': { headers: { 'x-svc-payer': PAYER } },
  'alerts.delete': { headers: { 'x-svc-payer': PAYER }, params: { alert_id: 'al_' + '0'.repeat(24) } },
  'contacts.create': { body: { contact: 'walker@example.com', consent: true, source: 'walker' } },
  'calls.lock': { body: { decision_id: RESOLVED_ID, call: 'obtains' }, headers: { 'x-svc-payer': PAYER } },
  'calls.scoreboard.personal': { query: `payer=${PAYER}` },
  'decisions.mine': { query: `payer=${PAYER}&limit=5` },
  'calls.scoreboard.aggregate': { headers: { 'x-svc-payer': PAYER } },
  'calls.opt_in': { body: { payer: PAYER, opt_in: true } },
  'scoreboard.public': { query: 'window=7d' },
  'risk.transaction': { body: risk },
  'risk.token': { body: { ...risk, token: { symbol: 'USDC' } } },
  'risk.wallet': { body: risk },
  'risk.protocol': { body: risk },
  'billing.pack': { body: { payer: PAYER } },
  'billing.plan': { body: { payer: PAYER } },
  'billing.scout.grant': { body: { payer: PAYER } },
  'billing.scout.status': { query: `payer=${PAYER}` },
  'billing.credits': { query: `payer=${PAYER}` },
  'billing.draws': { query: `payer=${PAYER}&limit=5` },
  'billing.grants': { body: { action: 'grant', payer: PAYER, credits: 5000, ref: 'walker-grant' }, headers: { 'x-svc-ops': OPS_TOKEN } },
  'billing.rate_lock.quote': { headers: { 'x-svc-payer': PAYER } },
  'billing.rate_lock.purchase': { body: { credits: 10_000, ref: 'walker-lock' }, headers: { 'x-svc-payer': PAYER, 'x-svc-ops': OPS_TOKEN } },
  'ops.surge': { headers: { 'x-svc-ops': OPS_TOKEN } },
  'ops.metrics': { headers: { 'x-svc-ops': OPS_TOKEN } },
  'admin.funnel': { headers: { 'x-admin-key': ADMIN_KEY } },
  verify: { body: { poj_id: decisionIdOf(RECEIPT_BODY), body: RECEIPT_BODY } },
  'arena.profile': { headers: { payer: PAYER } },
  'arena.quests': { query: `payer=${PAYER}` },
  'arena.next_action': { headers: { payer: PAYER } },
  'arena.season': { query: 'season_key=2026-W02' },
  'arena.leaderboard': { query: 'sort=accuracy&track=human&scope=season&limit=5' },
  'arena.opt_in': { body: { opt_in: true }, headers: { payer: PAYER } },
  'arena.agent': { body: { is_agent: false }, headers: { payer: PAYER } },
  'arena.notifications': { query: `payer=${PAYER}` },
  'streams.feed': {},
  'streams.clocks': {},
  'streams.decisions': {},
  'streams.notifications': { query: `payer=${PAYER}` },
  'arena.notifications.read': { body: { payer: PAYER } },
  'arena.notifications.preferences': { headers: { payer: PAYER } },
  'arena.notifications.preferences.set': { body: { payer: PAYER, preferences: { streak_ended: false } } },
  // Signed per run (a sign-in is one use): see proofFor below.
  'auth.session.open': { headers: {} },
  'auth.session.revoke': { headers: {} },
}

/** The proof a walked route needs: a fresh sign-in, a live session to revoke, or the named payer's session. */
async function proofFor(server: Server, route: RouteDef, url: string, init: RequestInit): Promise<void> {
  const headers = init.headers as Record<string, string>
  const account = privateKeyToAccount(generatePrivateKey())
  if (route.id === 'auth.session.open') headers['sign-in-with-x'] = await signInHeader(server.url, account)
  else if (route.id === 'auth.session.revoke') headers.authorization = `Bearer ${(await signIn(server.url, account)).token}`
  else init.headers = await withProof(server, url, headers, init.body)
}

function requestFor(route: RouteDef): { url: string; init: RequestInit } {
  const c = CASES[route.id] ?? {}
  const path = route.path.replace(/\{([a-z_]+)\}/g, (_, name: string) => encodeURIComponent(c.params?.[name] ?? PARAM_EXAMPLES[name] ?? 'x'))
  const headers: Record<string, string> = { ...(c.headers ?? {}) }
  const init: RequestInit = { method: route.method, headers, redirect: 'manual' }
  if (c.body !== undefined) {
    headers['content-type'] = 'application/json'
    init.body = JSON.stringify(c.body)
  }
  return { url: `${path}${c.query ? `?${c.query}` : ''}`, init }
}

t.test('every route that needs a query or body has a walker case', async (t) => {
  for (const r of ROUTES) {
    const q = r.request.query as { required?: string[] } | undefined
    if (r.request.body || (q?.required?.length ?? 0) > 0 || r.request.headers) t.ok(CASES[r.id], `case for ${r.id}`)
  }
})

t.test('walks every route with every part wired', async (t) => {
  const { parts } = memoryServices()
  parts.billing = await withBilling(t, { clock: parts.clock! })
  parts.arena = await withArena(t, parts.clock!, { optIn: [PAYER] })
  parts.funnel = memoryFunnel(new Date(parts.clock!.now()).toISOString())
  const { delivery, ledger } = await withDelivery(t, parts.clock!)
  ledger.addDecision({ decision_id: PENDING_ID })
  const unit = new UnitOfWork()
  await delivery.registerEndpoint(PAYER, 'https://hooks.example.com/walker', WALKER_ENDPOINT, { kind: 'paid', payment_id: WALKER_ENDPOINT, rail: 'credits', payer: PAYER }, unit)
  await unit.commit()
  parts.delivery = delivery
  // The live streams over a real (empty) ledger on an embedded log.
  const streamLog = await EmbeddedLog.open(await makeTempDir(t, 'svc-walker-streams-'))
  const streamLedger = await DecisionLedger.open({ log: streamLog })
  const streams = await LedgerStreams.open({ ledger: streamLedger, clockOf: () => null })
  t.teardown(async () => {
    await streams.close()
    await streamLedger.close()
    await streamLog.close()
  })
  parts.streams = streams
  const server = await withServer(t, { services: parts })
  for (const route of ROUTES) {
    await t.test(`${route.method} ${route.path}`, async (t) => {
      const { url, init } = requestFor(route)
      await proofFor(server, route, url, init)
      const stop = new AbortController()
      const res = await fetch(server.url + url, { ...init, signal: stop.signal })
      if (route.response.kind === 'stream') {
        // A stream never ends by itself: its head and first bytes, then the client goes away.
        t.equal(res.status, 200)
        t.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8')
        t.match(res.headers.get('ratelimit-limit'), /^\d+$/, 'RateLimit-Limit')
        const first = await res.body!.getReader().read()
        t.match(new TextDecoder().decode(first.value), /^retry: \d+\n/, 'the stream opens with its reconnect delay')
        stop.abort()
        return
      }
      const text = await res.text()
      t.ok(res.headers.get('x-request-id'), 'x-request-id')
      if (route.unlimited) t.equal(res.headers.get('ratelimit-limit'), null, 'health probes and metrics are not rate limited')
      else {
        t.match(res.headers.get('ratelimit-limit'), /^\d+$/, 'RateLimit-Limit')
        t.match(res.headers.get('ratelimit-remaining'), /^\d+$/, 'RateLimit-Remaining')
        t.match(res.headers.get('ratelimit-reset'), /^\d+$/, 'RateLimit-Reset')
      }

      if (route.pay.kind === 'paid') {
        t.equal(res.status, 402, text)
        const body = JSON.parse(text)
        t.ok(errorEnvelope(body), JSON.stringify(errorEnvelope.errors))
        t.equal(body.error.code, 'PAYMENT_REQUIRED')
        t.ok(routeErrors(route).includes('PAYMENT_REQUIRED'))
        t.equal(res.headers.get('cache-control'), 'no-store')
        const header = res.headers.get('payment-required')
        t.ok(header, 'PAYMENT-REQUIRED header')
        const pr = decodeHeader<PaymentRequired>(header!)
        const params = Object.fromEntries(concretePaidPaths(route).length > 1 ? [[Object.keys(PARAM_EXAMPLES).find((k) => route.path.includes(`{${k}}`) && /_id$/.test(k))!, route.id === 'billing.pack' ? 'booster_150k' : 'operator']] : [])
        const price = priceOf(pricingKeyFor(route, params), 0)
        t.equal(pr.x402Version, 2)
        t.equal(pr.resource.url, server.url + url.split('?')[0] + (url.includes('?') ? '?' + url.split('?')[1] : ''))
        t.equal(pr.resource.mimeType, 'application/json')
        t.same(pr.accepts, [{
          scheme: 'exact', network: 'eip155:8453', amount: price.amount_atomic, asset: USDC_BASE, payTo: PAY_TO,
          maxTimeoutSeconds: 60, extra: { name: 'USD Coin', version: '2' },
        }])
        t.equal(body.error.detail.pricing_key, price.key)
        return
      }

      switch (route.response.kind) {
        case 'envelope': {
          t.equal(res.status, route.response.status ?? 200, text)
          t.match(res.headers.get('content-type'), /^application\/json/)
          const validate = ajv.compile(envelopeSchema(route.response.schema))
          const body = JSON.parse(text)
          t.ok(validate(body), JSON.stringify(validate.errors))
          t.equal(body.meta.pricing, null, 'free route: meta.pricing null')
          break
        }
        case 'json': {
          t.equal(res.status, 200)
          t.match(res.headers.get('content-type'), route.response.contentType ?? /^application\/json/)
          const validate = ajv.compile(route.response.schema)
          t.ok(validate(JSON.parse(text)), JSON.stringify(validate.errors))
          break
        }
        case 'text':
          t.equal(res.status, 200)
          t.equal(res.headers.get('content-type'), route.response.contentType)
          t.ok(text.length > 0)
          break
        case 'redirect':
          t.equal(res.status, 302)
          t.equal(res.headers.get('location'), '/openapi.json')
          break
      }
    })
  }
})

t.test('with no parts wired, routes that need one answer 503 PROVIDER_DOWN naming it; the rest still serve', async (t) => {
  const server = await withServer(t)
  for (const route of ROUTES) {
    const { url, init } = requestFor(route)
    await proofFor(server, route, url, init)
    const res = await fetch(server.url + url, init)
    const text = await res.text()
    if (route.id === 'contacts.create') {
      // Spec: "503 CONTACTS_UNWIRED when this deployment does not record contacts".
      t.equal(res.status, 503, text)
      t.equal(JSON.parse(text).error.code, 'CONTACTS_UNWIRED')
    } else if (route.onlyWhenWired) {
      // A conditional route does not exist without its part: the same 404 as any unknown path.
      t.equal(res.status, 404, `${route.id}: ${text}`)
      t.equal(JSON.parse(text).error.code, 'ROUTE_NOT_FOUND')
    } else if (route.needs?.length) {
      t.equal(res.status, 503, `${route.id}: ${text}`)
      const body = JSON.parse(text)
      t.ok(errorEnvelope(body))
      t.equal(body.error.code, 'PROVIDER_DOWN')
      t.equal(body.error.detail.reason, 'SERVICE_UNWIRED')
      t.equal(body.error.detail.missing, route.needs[0])
      t.equal(body.error.retryable, true)
    } else {
      t.ok(res.status === 200 || res.status === 201 || res.status === 302 || res.status === 402, `${route.id} serves without parts (${res.status})`)
    }
  }
})

t.test('data routes answer the spec shapes from the wired ledger', async (t) => {
  const { parts } = memoryServices()
  const server = await withServer(t, { services: parts })
  const get = async (p: string) => {
    const r = await fetch(server.url + p)
    return { status: r.status, body: JSON.parse(await r.text()) }
  }
  const d = await get(`/v1/decisions/${RESOLVED_ID}`)
  t.same(d.body.meta.probabilities, { trend_up: 0.55, range: 0.3, trend_down: 0.15 }, 'meta mirrors the distribution')
  t.same(d.body.meta.confidence, { value: 0.4, basis: 'jev' })
  t.equal(d.body.meta.horizon, '60m')
  t.equal(d.body.meta.freshness.length, 1)

  const missing = await get('/v1/decisions/11111111-2222-4333-8444-555555555555')
  t.equal(missing.status, 404)
  t.equal(missing.body.error.code, 'DECISION_NOT_FOUND')

  const bad = await get('/v1/decisions/not-a-uuid')
  t.equal(bad.status, 400)
  t.equal(bad.body.error.detail.field, '/params/decision_id')

  const pending = await get('/v1/resolutions/0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d')
  t.equal(pending.body.data.status, 'pending')
  t.ok(pending.body.data.horizon_end)

  const clocks = await get('/v1/clocks/open')
  t.equal(clocks.body.data.clocks.length, 1)

  const latestUnknownAsset = await get('/v1/decisions/latest?question_id=S01_market_regime&asset=DOGE')
  t.equal(latestUnknownAsset.status, 400)
  t.equal(latestUnknownAsset.body.error.detail.field, '/query/asset')

  const snap = await get('/v1/market/NOPE')
  t.equal(snap.status, 404)
  t.equal(snap.body.error.code, 'ASSET_NOT_FOUND')

  const feedDefault = await get('/v1/feed')
  t.equal(feedDefault.status, 200, 'limit defaults to 50')
  const feedTooBig = await get('/v1/feed?limit=201')
  t.equal(feedTooBig.status, 400)
  t.equal(feedTooBig.body.error.detail.field, '/query/limit')

  const replayPin = await fetch(`${server.url}/v1/decisions/${RESOLVED_ID}/replay`, { method: 'POST', body: JSON.stringify({ ruleset_version: 'nonsense' }), headers: { 'content-type': 'application/json' } })
  const replayBody = JSON.parse(await replayPin.text())
  t.equal(replayPin.status, 400, 'a bad version pin is 400 VALIDATION')
  t.equal(replayBody.error.detail.field, '/body/ruleset_version')
})

t.test('readyz is 503 when a critical provider is down; healthz stays 200', async (t) => {
  const { parts } = memoryServices()
  parts.providers = {
    list: () => [
      { slug: 'hyperliquid', kind: 'venue', status: 'down', last_success_at: null, latency_ms: null, error_class: 'ECONNREFUSED', critical: true },
      { slug: 'basescan', kind: 'wallet', status: 'ok', last_success_at: null, latency_ms: 10, error_class: null, critical: false },
    ],
  }
  const server = await withServer(t, { services: parts })
  const ready = await fetch(server.url + '/readyz')
  const body = JSON.parse(await ready.text())
  t.equal(ready.status, 503)
  t.equal(body.error.code, 'PROVIDER_DOWN')
  t.equal(body.error.detail.providers.length, 2)
  const live = await fetch(server.url + '/healthz')
  const lb = JSON.parse(await live.text())
  t.equal(live.status, 200)
  t.equal(lb.data.status, 'down')
})
