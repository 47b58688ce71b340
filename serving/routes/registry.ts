/**
 * THE route registry: every route of the service, declared once. Routing, request validation, free/paid,
 * pricing, OpenAPI, the discovery documents and (later) the MCP catalog derive from this list.
 *
 * Spec (Versioning 6): "Free and paid classification is declared once in a route registry and enforced
 * identically on every route."
 */
import { activePolicy } from '../../models/policy/rulesets.ts'
import { PRIOR_FLOOR } from '../../models/engine/DecisionEngine.ts'
import { deepFreeze } from '../../common/deepFreeze.ts'
import { ServiceError } from '../ServiceError.ts'
import type { DecisionRead, MarketRead, MaybePromise, ProviderHealth, ProviderStatus, SnapshotRead } from '../ServiceContext.ts'
import {
  CREDIT_TO_USD, ENDPOINT_PRICES, JUDGMENT_FLOOR_CREDITS, PACKS, PLANNED_ADDONS, PLANS, UNMEASURED_LADDER,
  buildLadder, ladderMultiplier, priceOf, type EndpointPricingKey, type LadderMeasures, type PackId, type PlanId,
} from '../pricing.ts'
import { BASE_NETWORK, USDC_BASE } from '../payments/x402.ts'
import {
  ADDRESS, CALIBRATION, POLICY_SEAL, PRIORS, CANONICAL_ASSET, CHAIN, DECISION_ID_OR_PREFIX, DECISION_RECORD, FEED, HEALTH, HTTPS_URL,
  LIQ_HOURS, LINEAGE, MARKETCAP, MARKET_SNAPSHOT, OBJECT, OPEN_CLOCKS, PRICING, PROVIDERS, QUESTION_ID, REPLAY_RESULT,
  RESOLUTION, RISK_ASSESSMENT, RISK_CANDIDATE, SIGNALS, SYMBOL, UNIVERSE, UUID, WALLET_EVENTS, WALLET_POSITIONS, WALLET_PROFILE,
  WALLET_STATE_RESPONSE, objectOf,
} from './schemas.ts'
import type { Asset, RiskSubjectKind } from '../ServiceContext.ts'
import type { HandlerContext, HandlerResult, RouteDef } from './types.ts'
import { BILLING_ROUTES } from './billingRoutes.ts'
import { FUNDING_ASSET, FUNDING_OPPORTUNITIES, FUNDING_SNAPSHOT, LIQUIDATION_SURFACE } from './marketSchemas.ts'

/** The active sealed ruleset, computed once: its checksum is recomputable from the body (JCS + SHA-256). */
const POLICY_SEAL_BODY = activePolicy().seal()

const FREE = { kind: 'free' } as const
const paid = (pricingKey: EndpointPricingKey | 'billing.pack.{pack_id}' | 'billing.plan.{plan_id}') => ({ kind: 'paid', pricingKey }) as const
const env = (schema: Record<string, unknown>) => ({ kind: 'envelope', schema }) as const

const DECISION_ID_PARAMS = objectOf({ decision_id: UUID }, ['decision_id'])
const ASSET_PARAMS = objectOf({ asset: CANONICAL_ASSET }, ['asset'])
const WALLET_PARAMS = objectOf({ chain: CHAIN, address: ADDRESS }, ['chain', 'address'])
const PAYER_HEADER = objectOf({ 'x-svc-payer': ADDRESS }, ['x-svc-payer'], true)

/** A decision as data, with meta mirroring its distribution, confidence, horizon and input freshness. */
/** Spec: "refusal kinds stale_input, insufficient_confidence, suppress" (probability 0, confidence 0). */
const REFUSAL_KINDS = new Set(['stale_input', 'insufficient_confidence', 'suppress'])

/**
 * A decision read is frozen and reused per record (EngineServices), so its result is built once and frozen too:
 * the envelope then caches the meta it implies (serving/envelope.ts) instead of writing it per response.
 */
const decisionResults = new WeakMap<DecisionRead, HandlerResult>()

function decisionResult(read: DecisionRead): HandlerResult {
  const known = decisionResults.get(read)
  if (known) return known
  const r = read.record
  const result: HandlerResult = {
    refusal: REFUSAL_KINDS.has(r.decision),
    // Spec: "a repeat is not charged as a new decision row".
    ...(read.reserved ? { charge: false as const } : {}),
    data: r,
    meta: {
      state: r.decision,
      probabilities: r.choice?.distribution ?? null,
      confidence: Object.freeze({ value: r.confidence, basis: 'jev' as const }),
      horizon: r.horizon,
      freshness: read.freshness,
      data_sources: read.data_sources,
    },
  }
  if (Object.isFrozen(read)) {
    Object.freeze(result.meta)
    decisionResults.set(read, Object.freeze(result))
  }
  return result
}

/** A snapshot answer as a result; built once per frozen answer (MarketServices keeps one per symbol between ticks). */
const snapshotResults = new WeakMap<SnapshotRead, HandlerResult>()

function snapshotResult(r: SnapshotRead): HandlerResult {
  const known = snapshotResults.get(r)
  if (known) return known
  const degraded = r.freshness.some((f) => !f.ok)
  const result: HandlerResult = {
    data: r.snapshot,
    meta: { state: degraded ? 'degraded' : 'ok', freshness: r.freshness, data_sources: [r.snapshot.provenance.source] },
  }
  if (Object.isFrozen(r)) snapshotResults.set(r, deepFreeze(result))
  return result
}

/** A paid market surface as data, with meta stating its inputs' freshness; decisions in it follow decisionResult. */
function marketResult(read: MarketRead): HandlerResult {
  return {
    ...(read.refusal ? { refusal: true } : {}),
    ...(read.reserved ? { charge: false as const } : {}),
    data: read.data,
    meta: { state: read.state, freshness: read.freshness, data_sources: read.data_sources },
  }
}

/** f(value) now when the read answered synchronously, else once it resolves (the dispatcher awaits only promises). */
function andThen<T, R>(value: MaybePromise<T>, f: (v: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(f) : f(value)
}

function notFound(code: 'DECISION_NOT_FOUND' | 'ASSET_NOT_FOUND', field: string, value: unknown): never {
  throw new ServiceError(code, { detail: { field, value } })
}

const STATUS_RANK: Record<ProviderStatus, number> = { ok: 0, degraded: 1, down: 2 }

/**
 * Spec (/readyz): "status degraded when any provider is degraded; 503 when down". A critical provider down makes
 * the service down; a non-critical one down only degrades it. No providers registered: ok.
 */
export function rollupStatus(providers: ProviderHealth[]): ProviderStatus {
  let worst: ProviderStatus = 'ok'
  for (const p of providers) {
    const s: ProviderStatus = p.status === 'down' && !p.critical ? 'degraded' : p.status
    if (STATUS_RANK[s] > STATUS_RANK[worst]) worst = s
  }
  return worst
}

function health(ctx: HandlerContext) {
  const providers = ctx.services.providers?.list() ?? []
  return {
    status: rollupStatus(providers),
    uptime_s: Math.max(0, Math.floor((ctx.now - ctx.documents.startedAtMs) / 1000)),
    providers,
  }
}

const healthRoute = (id: string, path: string, summary: string): RouteDef => ({
  id,
  method: 'GET',
  path,
  summary,
  tags: ['platform'],
  pay: FREE,
  request: {},
  response: env(HEALTH),
  errors: [],
  handler: (ctx) => {
    const h = health(ctx)
    return { data: h, meta: { state: h.status } }
  },
})

/**
 * The price list is a pure function of the ladder measures and the deployment (payment rails, rate limits): built
 * once per distinct measures and frozen, so it is also serialized once (serving/envelope.ts jsonOf).
 */
const pricingCache = new WeakMap<object, { measures: LadderMeasures; key: string; data: ReturnType<typeof buildPricingData> }>()

/** Synchronous when no ladder is wired (the unmeasured rung 0), so the route then answers without a promise. */
function pricingData(ctx: HandlerContext): MaybePromise<ReturnType<typeof buildPricingData>> {
  return ctx.services.ladder ? ctx.services.ladder.measures().then((m) => pricingFor(ctx, m)) : pricingFor(ctx, UNMEASURED_LADDER)
}

function pricingFor(ctx: HandlerContext, measures: LadderMeasures) {
  const hit = pricingCache.get(ctx.services)
  // The same frozen measures object (always, with no ladder wired) needs no serialization to compare.
  if (hit && hit.measures === measures && Object.isFrozen(measures)) return hit.data
  const key = JSON.stringify(measures)
  if (hit && hit.key === key) return hit.data
  const data = deepFreeze(buildPricingData(ctx, measures))
  pricingCache.set(ctx.services, { measures, key, data })
  return data
}

function buildPricingData(ctx: HandlerContext, measures: LadderMeasures) {
  const rung = measures.rung
  const routesByKey = new Map<string, string[]>()
  for (const r of ROUTES) {
    if (r.pay.kind === 'paid') {
      const list = routesByKey.get(r.pay.pricingKey) ?? []
      list.push(`${r.method} ${r.path}`)
      routesByKey.set(r.pay.pricingKey, list)
    }
  }
  const endpoints = Object.fromEntries(
    (Object.keys(ENDPOINT_PRICES) as EndpointPricingKey[]).map((key) => {
      const p = priceOf(key, rung)
      return [key, {
        credits: p.credits, usd: p.usd, amount_atomic: p.amount_atomic, base_credits: ENDPOINT_PRICES[key].credits,
        summary: ENDPOINT_PRICES[key].summary, routes: routesByKey.get(key) ?? [],
      }]
    }),
  )
  const packs = (Object.keys(PACKS) as PackId[]).map((id) => {
    const p = priceOf(`billing.pack.${id}`, rung)
    return {
      pack_id: id, pricing_key: p.key, credits: p.credits, usd: p.usd, amount_atomic: p.amount_atomic,
      base_price_usd: priceOf(p.key, 0).usd, lot_days: PACKS[id].lot_days,
    }
  })
  const plans = (Object.keys(PLANS) as PlanId[]).map((id) => {
    const p = priceOf(`billing.plan.${id}`, rung)
    return {
      plan_id: id, name: PLANS[id].name, pricing_key: p.key, credits: p.credits, usd: p.usd, amount_atomic: p.amount_atomic,
      base_price_usd: priceOf(p.key, 0).usd, cycle_days: PLANS[id].cycle_days, auto_renew: false as const,
    }
  })
  return {
    currency: 'USD' as const,
    credit_to_usd: CREDIT_TO_USD,
    judgment_floor_credits: JUDGMENT_FLOOR_CREDITS,
    rung,
    multiplier: ladderMultiplier(rung),
    endpoints,
    packs,
    plans,
    planned_addons: Object.entries(PLANNED_ADDONS).map(([key, a]) => ({ key, usd: `${a.usd}.00`, on_sale: false as const })),
    free_allowance: {
      questions: 3, credits_per_question: 1000, credits: 3000,
      eligible: ['S01_market_regime', 'S05_volatility_expansion', 'S06_funding_anomaly'], recharges: false as const,
    },
    payment: { rails: ctx.services.config.payTo === null ? ['credits'] : ['x402', 'credits'], scheme: 'exact' as const, network: BASE_NETWORK, asset: USDC_BASE, pay_to: ctx.services.config.payTo },
    rate_limits: ctx.services.rateLimiter.describe(),
    ladder: buildLadder(measures),
  }
}

const doc = (id: string, path: string, summary: string, pick: (ctx: HandlerContext) => { body: Uint8Array; contentType: string }, response: RouteDef['response'], tags = ['discovery']): RouteDef => ({
  id, method: 'GET', path, summary, tags, pay: FREE, request: {}, response, errors: [],
  handler: (ctx) => ({ raw: pick(ctx) }),
})

const JSON_DOC = { type: 'object' } as const

const riskRoute = (kind: RiskSubjectKind, extra: Record<string, unknown>, required: string[]): RouteDef => ({
  id: `risk.${kind}`,
  method: 'POST',
  path: `/v1/risk/${kind}`,
  summary: `S11 risk assessment of a ${kind} subject`,
  tags: ['risk'],
  pay: paid('risk.assess'),
  needs: ['risk'],
  request: {
    body: objectOf({ asset: CANONICAL_ASSET, address: ADDRESS, candidate: RISK_CANDIDATE, ...extra }, ['asset', 'address', 'candidate', ...required]),
  },
  response: env(RISK_ASSESSMENT),
  errors: ['PROVIDER_DOWN'],
  handler: async (ctx) => ({ data: await ctx.need('risk').assess(kind, ctx.body, ctx.payment!) }),
})

const WALLET_RESPONSES = { profile: WALLET_PROFILE, state: WALLET_STATE_RESPONSE, positions: WALLET_POSITIONS } as const

const walletRoute = (id: string, suffix: string, summary: string, key: EndpointPricingKey, call: 'profile' | 'state' | 'positions'): RouteDef => ({
  id, method: 'GET', path: `/v1/wallet/{chain}/{address}${suffix}`, summary, tags: ['wallet'], pay: paid(key), needs: ['wallets'],
  request: { params: WALLET_PARAMS }, response: env(WALLET_RESPONSES[call]), errors: ['PROVIDER_DOWN'],
  handler: async (ctx) => ({ data: await ctx.need('wallets')[call]('base', String(ctx.params.address), ctx.payment!) }),
})

export const ROUTES: readonly RouteDef[] = [
  // ---------------------------------------------------------------- platform (free)
  healthRoute('healthz', '/healthz', 'Liveness plus provider rollup'),
  healthRoute('health', '/health', 'Alias of /healthz'),
  {
    id: 'readyz',
    method: 'GET',
    path: '/readyz',
    summary: 'Readiness: provider rollup; 503 PROVIDER_DOWN when a critical provider is down',
    tags: ['platform'],
    pay: FREE,
    request: {},
    response: env(HEALTH),
    errors: ['PROVIDER_DOWN'],
    handler: (ctx) => {
      const h = health(ctx)
      if (h.status === 'down') {
        throw new ServiceError('PROVIDER_DOWN', { detail: { reason: 'NOT_READY', status: h.status, uptime_s: h.uptime_s, providers: h.providers } })
      }
      return { data: h, meta: { state: h.status } }
    },
  },
  {
    id: 'pricing',
    method: 'GET',
    path: '/v1/pricing',
    summary: 'Price list: per-endpoint prices, plans, packs, credit_to_usd anchor, rate limits and the ladder',
    tags: ['platform'],
    pay: FREE,
    request: {},
    response: env(PRICING),
    errors: [],
    handler: (ctx) => andThen(pricingData(ctx), (data) => ({ data })),
  },
  doc('openapi', '/openapi.json', 'OpenAPI 3.1 document', (c) => c.documents.openapi, { kind: 'json', schema: JSON_DOC }),
  doc('openapi.v1', '/v1/openapi.json', 'OpenAPI 3.1 document (versioned path)', (c) => c.documents.openapi, { kind: 'json', schema: JSON_DOC }),
  doc('wellknown.x402', '/.well-known/x402.json', 'x402 payment requirements of every paid route', (c) => c.documents.x402, { kind: 'json', schema: JSON_DOC }),
  doc('wellknown.agent', '/.well-known/agent.json', 'Agent card', (c) => c.documents.agent, { kind: 'json', schema: JSON_DOC }),
  doc('wellknown.ai', '/.well-known/ai.txt', 'Documents to read first', (c) => c.documents.aiTxt, { kind: 'text', contentType: 'text/plain; charset=utf-8' }),
  doc('llms', '/llms.txt', 'Agent recipe and endpoint reference', (c) => c.documents.llms, { kind: 'text', contentType: 'text/markdown; charset=utf-8' }),
  doc('llms.full', '/llms-full.txt', 'Same document as /llms.txt', (c) => c.documents.llms, { kind: 'text', contentType: 'text/markdown; charset=utf-8' }),
  doc('robots', '/robots.txt', 'Crawler rules', (c) => c.documents.robots, { kind: 'text', contentType: 'text/plain; charset=utf-8' }),
  {
    id: 'docs',
    method: 'GET',
    path: '/docs',
    summary: 'Redirects to the human documentation, else to /openapi.json',
    tags: ['discovery'],
    pay: FREE,
    request: {},
    response: { kind: 'redirect' },
    errors: [],
    handler: (ctx) => ({ redirect: ctx.documents.docsLocation, status: 302 }),
  },
  {
    id: 'providers',
    method: 'GET',
    path: '/v1/providers',
    summary: 'Provider inventory and health',
    tags: ['platform'],
    pay: FREE,
    request: {},
    response: env(PROVIDERS),
    errors: [],
    handler: (ctx) => ({ data: { providers: ctx.services.providers?.list() ?? [] } }),
  },
  {
    id: 'signals',
    method: 'GET',
    path: '/v1/signals',
    summary: 'The question catalog, each available or blocked with its exact reason',
    tags: ['platform'],
    pay: FREE,
    needs: ['engine'],
    request: {},
    response: env(SIGNALS),
    errors: [],
    handler: async (ctx) => ({ data: await ctx.need('engine').signals() }),
  },
  {
    id: 'liq.hours',
    method: 'GET',
    path: '/v1/liq/hours',
    summary: "A market's N/24 hourly liquidation-observation figure (S02 readiness)",
    tags: ['market'],
    pay: FREE,
    needs: ['market'],
    request: { query: objectOf({ asset: SYMBOL }, ['asset'], true) },
    response: env(LIQ_HOURS),
    errors: ['ASSET_NOT_FOUND'],
    handler: async (ctx) => {
      const r = await ctx.need('market').liqHours(String(ctx.query.asset))
      return r ? { data: r } : notFound('ASSET_NOT_FOUND', '/query/asset', ctx.query.asset)
    },
  },

  // ---------------------------------------------------------------- ledger reads (free)
  {
    id: 'decisions.latest',
    method: 'GET',
    path: '/v1/decisions/latest',
    summary: 'Newest recorded decision for a question and asset (refusals included)',
    tags: ['decisions'],
    pay: FREE,
    needs: ['ledger'],
    request: { query: objectOf({ question_id: QUESTION_ID, asset: CANONICAL_ASSET }, ['question_id', 'asset'], true) },
    response: env(DECISION_RECORD),
    errors: ['DECISION_NOT_FOUND'],
    handler: async (ctx) => {
      const read = await ctx.need('ledger').latestDecision({ question_id: String(ctx.query.question_id), asset: String(ctx.query.asset) })
      return read ? decisionResult(read) : notFound('DECISION_NOT_FOUND', '/query', ctx.query)
    },
  },
  {
    id: 'decisions.get',
    method: 'GET',
    path: '/v1/decisions/{decision_id}',
    summary: 'A stored decision record',
    tags: ['decisions'],
    pay: FREE,
    needs: ['ledger'],
    request: { params: DECISION_ID_PARAMS },
    response: env(DECISION_RECORD),
    errors: ['DECISION_NOT_FOUND'],
    handler: (ctx) =>
      andThen(ctx.need('ledger').getDecision(String(ctx.params.decision_id)), (read) =>
        read ? decisionResult(read) : notFound('DECISION_NOT_FOUND', '/params/decision_id', ctx.params.decision_id),
      ),
  },
  {
    id: 'decisions.replay',
    method: 'POST',
    path: '/v1/decisions/{decision_id}/replay',
    summary: 'Replays a decision against its journaled inputs under its (or a pinned) ruleset',
    tags: ['decisions'],
    pay: FREE,
    needs: ['engine'],
    request: {
      params: DECISION_ID_PARAMS,
      body: objectOf({ ruleset_version: { type: 'string', pattern: '^v?[0-9]+\\.[0-9]+\\.[0-9]+$' } }),
    },
    response: env(REPLAY_RESULT),
    errors: ['DECISION_NOT_FOUND', 'REPLAY_INPUT_LOST'],
    handler: async (ctx) => {
      const pin = typeof ctx.body.ruleset_version === 'string' ? ctx.body.ruleset_version : null
      const r = await ctx.need('engine').replay(String(ctx.params.decision_id), { ruleset_version: pin })
      return r ? { data: r } : notFound('DECISION_NOT_FOUND', '/params/decision_id', ctx.params.decision_id)
    },
  },
  {
    id: 'resolutions.get',
    method: 'GET',
    path: '/v1/resolutions/{decision_id}',
    summary: 'Resolution record, or pending with horizon_end',
    tags: ['decisions'],
    pay: FREE,
    needs: ['ledger'],
    request: { params: DECISION_ID_PARAMS },
    response: env(RESOLUTION),
    errors: ['DECISION_NOT_FOUND'],
    handler: async (ctx) => {
      const r = await ctx.need('ledger').resolution(String(ctx.params.decision_id))
      return r ? { data: r, meta: { state: r.status } } : notFound('DECISION_NOT_FOUND', '/params/decision_id', ctx.params.decision_id)
    },
  },
  {
    id: 'lineage.get',
    method: 'GET',
    path: '/v1/lineage/{decision_id}',
    summary: 'Lineage bundle of one decision (id or unique prefix of 8+ characters); a ledger read only',
    tags: ['decisions'],
    pay: FREE,
    needs: ['ledger'],
    request: { params: objectOf({ decision_id: DECISION_ID_OR_PREFIX }, ['decision_id']) },
    response: env(LINEAGE),
    errors: ['DECISION_NOT_FOUND'],
    handler: async (ctx) => {
      const r = await ctx.need('ledger').lineage(String(ctx.params.decision_id).toLowerCase())
      return r ? { data: r } : notFound('DECISION_NOT_FOUND', '/params/decision_id', ctx.params.decision_id)
    },
  },
  {
    id: 'calibration',
    method: 'GET',
    path: '/v1/calibration',
    summary: 'Calibration report: decile buckets of predicted against realized frequency',
    tags: ['measured-record'],
    pay: FREE,
    needs: ['ledger'],
    request: { query: objectOf({ question_id: QUESTION_ID, subject: { type: 'string', minLength: 1, maxLength: 64 } }, [], true) },
    response: env(CALIBRATION),
    errors: [],
    handler: async (ctx) => ({
      data: await ctx.need('ledger').calibration({
        question_id: typeof ctx.query.question_id === 'string' ? ctx.query.question_id : null,
        subject: typeof ctx.query.subject === 'string' ? ctx.query.subject : null,
      }),
    }),
  },
  {
    id: 'priors',
    method: 'GET',
    path: '/v1/priors',
    summary: 'Per-question base rates (pooled rate, Wilson interval, n, successes, verdict; label histogram for choice questions)',
    tags: ['measured-record'],
    pay: FREE,
    needs: ['ledger'],
    request: {},
    response: env(PRIORS),
    errors: [],
    handler: async (ctx) => ({
      data: {
        priors: await ctx.need('ledger').priors(),
        n_floor: PRIOR_FLOOR,
        note: 'A prior is a base rate, not a forecast: realized claims pooled over assets (unresolvable outcomes and refusals excluded); published once n reaches the floor.',
      },
    }),
  },
  {
    id: 'policy.seal',
    method: 'GET',
    path: '/v1/policy/seal',
    summary: 'The sealed policy ruleset in force, with its JCS SHA-256 checksum (recomputable from the body)',
    tags: ['measured-record'],
    pay: FREE,
    request: {},
    response: env(POLICY_SEAL),
    errors: [],
    handler: () => ({ data: POLICY_SEAL_BODY }),
  },
  {
    id: 'clocks.open',
    method: 'GET',
    path: '/v1/clocks/open',
    summary: 'Open decision clocks, soonest horizon_end first',
    tags: ['decisions'],
    pay: FREE,
    needs: ['ledger'],
    request: {},
    response: env(OPEN_CLOCKS),
    errors: ['STALE_DATA'],
    handler: (ctx) => andThen(ctx.need('ledger').openClocks(), (clocks) => ({ data: { clocks } })),
  },
  {
    id: 'feed',
    method: 'GET',
    path: '/v1/feed',
    summary: 'Resolved decision chips, newest first',
    tags: ['decisions'],
    pay: FREE,
    needs: ['ledger'],
    request: { query: objectOf({ limit: { type: 'integer', minimum: 1, maximum: 200, default: 50 } }, [], true) },
    response: env(FEED),
    errors: [],
    handler: (ctx) => andThen(ctx.need('ledger').feed({ limit: Number(ctx.query.limit) }), (chips) => ({ data: { chips } })),
  },

  // ---------------------------------------------------------------- market reads (free)
  {
    id: 'market.snapshot',
    method: 'GET',
    path: '/v1/market/{asset}',
    summary: 'Free market snapshot of a listed symbol; no probability claim',
    tags: ['market'],
    pay: FREE,
    needs: ['market'],
    request: { params: objectOf({ asset: SYMBOL }, ['asset']) },
    response: env(MARKET_SNAPSHOT),
    errors: ['ASSET_NOT_FOUND', 'STALE_DATA'],
    handler: (ctx) =>
      andThen(ctx.need('market').snapshot(String(ctx.params.asset)), (r) =>
        r ? snapshotResult(r) : notFound('ASSET_NOT_FOUND', '/params/asset', ctx.params.asset),
      ),
  },
  {
    id: 'universe',
    method: 'GET',
    path: '/v1/universe',
    summary: 'Live venue universe by 24h volume (cached at most 15 s)',
    tags: ['market'],
    pay: FREE,
    needs: ['market'],
    request: {
      query: objectOf(
        { limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 }, q: { type: 'string', pattern: '^[A-Za-z0-9]{1,20}$' } },
        [],
        true,
      ),
    },
    response: env(UNIVERSE),
    errors: [],
    handler: async (ctx) => {
      const u = await ctx.need('market').universe({
        limit: Number(ctx.query.limit),
        q: typeof ctx.query.q === 'string' ? ctx.query.q.toUpperCase() : null,
      })
      return { data: u, meta: { state: u.quality === 'real' ? 'ok' : 'degraded', data_sources: [u.venue] } }
    },
  },
  {
    id: 'marketcap',
    method: 'GET',
    path: '/v1/marketcap',
    summary: 'Largest coins by market cap, each marked askable when live on the venue',
    tags: ['market'],
    pay: FREE,
    needs: ['market'],
    request: {},
    response: env(MARKETCAP),
    errors: [],
    handler: async (ctx) => {
      const m = await ctx.need('market').marketcap()
      return { data: m, meta: { data_sources: [m.source] } }
    },
  },

  // ---------------------------------------------------------------- paid intelligence
  {
    id: 'decisions.create',
    method: 'POST',
    path: '/v1/decisions',
    summary: 'Ask a catalog question; the answer is recorded as a decision',
    tags: ['decisions'],
    pay: paid('decision.deep'),
    needs: ['engine'],
    questionOf: (ctx) => String(ctx.body.question_id),
    request: {
      // Spec gap (docs/decisions.md): the account-scoped questions name their wallet in `subject` (required for
      // S09..S11, checked before payment); S11 also takes the candidate movement it assesses (as the risk routes).
      body: {
        ...objectOf({ asset: CANONICAL_ASSET, chain: CHAIN, question_id: QUESTION_ID, subject: ADDRESS, candidate: RISK_CANDIDATE }, ['asset', 'question_id']),
        allOf: [
          { if: { properties: { question_id: { enum: ['S09_wallet_state', 'S10_wallet_flow', 'S11_risk'] } }, required: ['question_id'] }, then: { required: ['subject'] } },
          { if: { properties: { question_id: { const: 'S11_risk' } }, required: ['question_id'] }, then: { required: ['candidate'] } },
        ],
      },
    },
    response: env(DECISION_RECORD),
    errors: ['STALE_DATA'],
    handler: async (ctx) => {
      const b = ctx.body
      const read = await ctx.need('engine').decide(
        {
          asset: b.asset as Asset,
          chain: 'base',
          question_id: String(b.question_id),
          subject: typeof b.subject === 'string' ? b.subject : null,
          candidate: typeof b.candidate === 'object' && b.candidate !== null ? (b.candidate as Record<string, unknown>) : null,
        },
        ctx.payment!,
      )
      return decisionResult(read)
    },
  },
  {
    id: 'decisions.next',
    method: 'POST',
    path: '/v1/decisions/next',
    summary: 'Ask the same question again once the previous clock closed',
    tags: ['decisions'],
    pay: paid('decision.deep'),
    needs: ['engine'],
    request: { body: objectOf({ previous_decision_id: UUID }, ['previous_decision_id']) },
    response: env(DECISION_RECORD),
    errors: ['CLOCK_OPEN', 'DECISION_NOT_FOUND', 'STALE_DATA'],
    handler: async (ctx) => {
      const read = await ctx.need('engine').nextDecision(String(ctx.body.previous_decision_id), ctx.payment!)
      return read ? decisionResult(read) : notFound('DECISION_NOT_FOUND', '/body/previous_decision_id', ctx.body.previous_decision_id)
    },
  },
  {
    id: 'hooks.create',
    method: 'POST',
    path: '/v1/hooks',
    summary: 'Arm a signed resolution hook for one decision',
    tags: ['delivery'],
    pay: paid('decision.deep'),
    needs: ['duel'],
    request: { body: objectOf({ decision_id: UUID, url: HTTPS_URL }, ['decision_id', 'url']) },
    response: env(OBJECT),
    errors: ['DECISION_NOT_FOUND', 'HOOK_CLOCK_TERMINAL', 'UNSAFE_URL'],
    handler: async (ctx) => {
      const r = await ctx.need('duel').armHook({ decision_id: String(ctx.body.decision_id), url: String(ctx.body.url) }, ctx.payment!)
      return r ? { data: r, status: 201 } : notFound('DECISION_NOT_FOUND', '/body/decision_id', ctx.body.decision_id)
    },
  },
  {
    id: 'calls.lock',
    method: 'POST',
    path: '/v1/calls',
    summary: 'Lock a personal call on an open clock (the duel)',
    tags: ['duel'],
    pay: paid('decision.deep'),
    needs: ['duel'],
    request: {
      headers: PAYER_HEADER,
      body: objectOf({ decision_id: UUID, call: { enum: ['obtains', 'not'] }, call_probability: { type: 'number', minimum: 0, maximum: 1 } }, ['decision_id', 'call']),
    },
    response: env(OBJECT),
    errors: ['DECISION_NOT_FOUND', 'CLOCK_CLOSED', 'CALL_ALREADY_LOCKED'],
    handler: async (ctx) => {
      const r = await ctx.need('duel').lockCall(
        {
          payer: ctx.headers['x-svc-payer'] as string,
          decision_id: String(ctx.body.decision_id),
          call: ctx.body.call as 'obtains' | 'not',
          call_probability: typeof ctx.body.call_probability === 'number' ? ctx.body.call_probability : null,
        },
        ctx.payment!,
      )
      return r ? { data: r, status: 201 } : notFound('DECISION_NOT_FOUND', '/body/decision_id', ctx.body.decision_id)
    },
  },
  {
    id: 'market.regime',
    method: 'GET',
    path: '/v1/market/{asset}/regime',
    summary: 'S01 market regime decision (distribution over regime classes)',
    tags: ['market'],
    pay: paid('signals.evaluate'),
    needs: ['engine'],
    questionOf: () => 'S01_market_regime',
    request: { params: ASSET_PARAMS },
    response: env(DECISION_RECORD),
    errors: ['STALE_DATA'],
    handler: async (ctx) => decisionResult(await ctx.need('engine').marketRegime(ctx.params.asset as Asset, ctx.payment!)),
  },
  {
    id: 'market.risk',
    method: 'GET',
    path: '/v1/market/{asset}/risk',
    summary: 'S02 liquidation-risk decision (not sold on this deployment; resolves to suppress)',
    tags: ['market'],
    pay: paid('signals.evaluate'),
    needs: ['engine'],
    request: { params: ASSET_PARAMS },
    response: env(DECISION_RECORD),
    errors: ['STALE_DATA'],
    handler: async (ctx) => decisionResult(await ctx.need('engine').marketRisk(ctx.params.asset as Asset, ctx.payment!)),
  },
  {
    id: 'liquidation.surface',
    method: 'GET',
    path: '/v1/liquidation/{asset}',
    summary: 'Liquidation surface of one market, or its unavailability (200, available false)',
    tags: ['market'],
    pay: paid('perp.liquidations'),
    needs: ['market'],
    request: { params: ASSET_PARAMS },
    response: env(LIQUIDATION_SURFACE),
    errors: ['PROVIDER_DOWN'],
    handler: async (ctx) => marketResult(await ctx.need('market').liquidationSurface(ctx.params.asset as Asset, ctx.payment!)),
  },
  {
    id: 'funding.snapshot',
    method: 'GET',
    path: '/v1/funding',
    summary: 'Funding snapshot for each canonical asset',
    tags: ['funding'],
    pay: paid('perp.funding'),
    needs: ['market'],
    request: {},
    response: env(FUNDING_SNAPSHOT),
    errors: ['PROVIDER_DOWN'],
    handler: async (ctx) => marketResult(await ctx.need('market').fundingSnapshot(ctx.payment!)),
  },
  {
    id: 'funding.opportunities',
    method: 'GET',
    path: '/v1/funding/opportunities',
    summary: 'S06 funding-anomaly scan with assumptions (raw context, never a profit claim)',
    tags: ['funding'],
    pay: paid('signals.evaluate'),
    needs: ['market'],
    request: {},
    response: env(FUNDING_OPPORTUNITIES),
    errors: ['PROVIDER_DOWN'],
    handler: async (ctx) => marketResult(await ctx.need('market').fundingOpportunities(ctx.payment!)),
  },
  {
    id: 'funding.asset',
    method: 'GET',
    path: '/v1/funding/{asset}',
    summary: 'S06 and S07 decisions, basis, execution risk and assumptions for one asset',
    tags: ['funding'],
    pay: paid('signals.evaluate'),
    needs: ['market'],
    request: { params: ASSET_PARAMS },
    response: env(FUNDING_ASSET),
    errors: ['PROVIDER_DOWN'],
    handler: async (ctx) => marketResult(await ctx.need('market').fundingAsset(ctx.params.asset as Asset, ctx.payment!)),
  },
  walletRoute('wallet.profile', '', 'Wallet profile', 'wallet.profile', 'profile'),
  walletRoute('wallet.state', '/state', 'Wallet state machine position', 'wallet.state', 'state'),
  walletRoute('wallet.positions', '/positions', 'Wallet balances', 'wallet.state', 'positions'),
  {
    id: 'wallet.events',
    method: 'GET',
    path: '/v1/wallet/{chain}/{address}/events',
    summary: 'Paginated wallet transfer events (unvalued transfers are kept, marked as such)',
    tags: ['wallet'],
    pay: paid('wallet.events'),
    needs: ['wallets'],
    request: {
      params: WALLET_PARAMS,
      query: objectOf({ window: { type: 'string', pattern: '^[0-9]+[hd]$', default: '24h' }, cursor: { type: 'string', maxLength: 256 } }, [], true),
    },
    response: env(WALLET_EVENTS),
    errors: ['PROVIDER_DOWN'],
    handler: async (ctx) => ({
      data: await ctx.need('wallets').events(
        'base',
        String(ctx.params.address),
        { window: String(ctx.query.window), cursor: typeof ctx.query.cursor === 'string' ? ctx.query.cursor : null },
        ctx.payment!,
      ),
    }),
  },
  riskRoute('transaction', {}, []),
  riskRoute('token', { token: objectOf({ symbol: { type: 'string', minLength: 1, maxLength: 20 } }, ['symbol']) }, ['token']),
  riskRoute('wallet', {}, []),
  riskRoute('protocol', {}, []),

  // ---------------------------------------------------------------- billing (paid purchases)
  {
    id: 'billing.pack',
    method: 'POST',
    path: '/v1/billing/packs/{pack_id}',
    summary: 'Buy a booster pack (credits land as a 60-day lot)',
    tags: ['billing'],
    pay: paid('billing.pack.{pack_id}'),
    needs: ['billing'],
    request: { params: objectOf({ pack_id: { type: 'string', enum: Object.keys(PACKS) } }, ['pack_id']), body: objectOf({ payer: ADDRESS }, ['payer']) },
    response: env(OBJECT),
    errors: ['PLAN_NOT_RECHARGEABLE'],
    handler: async (ctx) => ({ data: await ctx.need('billing').purchasePack(ctx.params.pack_id as PackId, String(ctx.body.payer), ctx.payment!, ctx.price!) }),
  },
  {
    id: 'billing.plan',
    method: 'POST',
    path: '/v1/billing/plans/{plan_id}',
    summary: 'Buy a 30-day credit plan (no automatic renewal)',
    tags: ['billing'],
    pay: paid('billing.plan.{plan_id}'),
    needs: ['billing'],
    request: { params: objectOf({ plan_id: { type: 'string', enum: Object.keys(PLANS) } }, ['plan_id']), body: objectOf({ payer: ADDRESS }, ['payer']) },
    response: env(OBJECT),
    errors: ['PLAN_NOT_RECHARGEABLE'],
    handler: async (ctx) => ({ data: await ctx.need('billing').purchasePlan(ctx.params.plan_id as PlanId, String(ctx.body.payer), ctx.payment!, ctx.price!) }),
  },
  ...BILLING_ROUTES,
]
