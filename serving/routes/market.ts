/**
 * Market routes (spec, Platform: universe, market cap, market snapshot, liq/hours; Paid intelligence routes: regime,
 * S02 risk, liquidation surface, funding). Transport only: answers and their meta come from the market domain
 * (product/market/MarketData.ts snapshotAnswer, marketAnswer) and the engine (decisionAnswer); every decision record in them is signed (./signatures.ts).
 */
import { andThen } from '../../common/MaybePromise.ts'
import { CanonicalAsset, Open, Type, VenueSymbol, type Static } from '../../common/schema.ts'
import { DECISION_RECORD } from '../../engine/schemas.ts'
import { marketAnswer, snapshotAnswer } from '../../product/market/MarketData.ts'
import {
  FUNDING_ASSET, FUNDING_OPPORTUNITIES, FUNDING_SNAPSHOT, LIQ_HOURS, LIQUIDATION_SURFACE, MARKETCAP, MARKET_SNAPSHOT, UNIVERSE,
} from '../../product/market/schemas.ts'
import { ASSET_PARAMS, FREE, env, notFound, paid } from './define.ts'
import { signRecords, signedDecision } from './signatures.ts'
import type { RouteDef } from './types.ts'

type FundingAsset = Static<typeof FUNDING_ASSET>
type FundingOpportunities = Static<typeof FUNDING_OPPORTUNITIES>


export const MARKET_ROUTES: readonly RouteDef[] = [
  {
    id: 'liq.hours',
    method: 'GET',
    path: '/v1/liq/hours',
    summary: "A market's N/24 hourly liquidation-observation figure (S02 readiness)",
    tags: ['market'],
    pay: FREE,
    needs: ['market'],
    request: { query: Open({ asset: VenueSymbol }) },
    response: env(LIQ_HOURS),
    errors: ['ASSET_NOT_FOUND', 'STALE_DATA'],
    handler: async (ctx) => {
      const r = await ctx.need('market').liqHours(String(ctx.query.asset))
      return r ? { data: r } : notFound('ASSET_NOT_FOUND', '/query/asset', ctx.query.asset)
    },
  },
  {
    id: 'market.snapshot',
    method: 'GET',
    path: '/v1/market/{asset}',
    summary: 'Free market snapshot of a listed symbol; no probability claim',
    tags: ['market'],
    pay: FREE,
    mcp: {
      name: 'svc_market_state',
      description:
        'The current quote of one listed perp market (price, bid, ask, mark, index, 24h volume, mid, spread) with its provenance and age. Free; no probability claim. Any symbol of svc_universe.',
    },
    needs: ['market'],
    request: { params: Type.Object({ asset: VenueSymbol }, { additionalProperties: false }) },
    response: env(MARKET_SNAPSHOT),
    errors: ['ASSET_NOT_FOUND', 'STALE_DATA'],
    handler: (ctx) =>
      andThen(ctx.need('market').snapshot(String(ctx.params.asset)), (r) =>
        r ? snapshotAnswer(r) : notFound('ASSET_NOT_FOUND', '/params/asset', ctx.params.asset),
      ),
  },
  {
    id: 'universe',
    method: 'GET',
    path: '/v1/universe',
    summary: 'Live venue universe by 24h volume (cached at most 15 s)',
    tags: ['market'],
    pay: FREE,
    mcp: {
      name: 'svc_universe',
      description: 'The markets live on the venue, largest 24h volume first, with mid, mark, 24h change, open interest, funding and max leverage. Free; cached at most 15 s.',
    },
    needs: ['market'],
    request: {
      query: Open({
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
        q: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9]{1,20}$' })),
      }),
    },
    response: env(UNIVERSE),
    errors: ['STALE_DATA'],
    handler: async (ctx) => {
      const u = await ctx.need('market').universe({
        limit: Number(ctx.query.limit),
        q: typeof ctx.query.q === 'string' ? ctx.query.q.toUpperCase() : null,
      })
      return { data: u, meta: { state: u.quality === 'degraded' ? 'degraded' : 'ok', data_sources: [u.venue] } }
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
  {
    id: 'market.regime',
    method: 'GET',
    path: '/v1/market/{asset}/regime',
    summary: 'S01 market regime decision (distribution over regime classes)',
    tags: ['market'],
    pay: paid('signals.evaluate'),
    mcp: {
      name: 'svc_market_regime',
      description:
        "Classify an asset's market regime now (S01: a probability distribution over the regime classes, the chosen class and confidence), recorded on the ledger and resolved at its horizon. Cheaper than svc_decision for this one question; paid (signals price).",
    },
    needs: ['engine'],
    questionOf: () => 'S01_market_regime',
    request: { params: ASSET_PARAMS },
    response: env(DECISION_RECORD),
    errors: ['STALE_DATA'],
    handler: async (ctx) => signedDecision(ctx, await ctx.need('engine').marketRegime(ctx.params.asset as CanonicalAsset, ctx.payment!, ctx.unit!)),
  },
  {
    id: 'market.risk',
    method: 'GET',
    path: '/v1/market/{asset}/risk',
    summary: 'S02 liquidation-risk decision (not sold on this deployment; resolves to suppress)',
    tags: ['market'],
    pay: paid('signals.evaluate'),
    mcp: {
      name: 'svc_liquidation_risk',
      description:
        'The S02 liquidation-risk decision for BTC, ETH or SOL. Not sold on this deployment: it answers a recorded suppress refusal (probability 0) so the refusal can be inspected. Paid.',
    },
    needs: ['engine'],
    request: { params: ASSET_PARAMS },
    response: env(DECISION_RECORD),
    errors: ['STALE_DATA'],
    handler: async (ctx) => signedDecision(ctx, await ctx.need('engine').marketRisk(ctx.params.asset as CanonicalAsset, ctx.payment!, ctx.unit!)),
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
    errors: ['PROVIDER_DOWN', 'STALE_DATA'],
    handler: async (ctx) => marketAnswer(await ctx.need('market').liquidationSurface(ctx.params.asset as CanonicalAsset, ctx.payment!)),
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
    errors: ['PROVIDER_DOWN', 'STALE_DATA'],
    handler: async (ctx) => marketAnswer(await ctx.need('market').fundingSnapshot(ctx.payment!)),
  },
  {
    id: 'funding.opportunities',
    method: 'GET',
    path: '/v1/funding/opportunities',
    summary: 'S06 funding-anomaly scan with assumptions (raw context, never a profit claim)',
    tags: ['funding'],
    pay: paid('signals.evaluate'),
    mcp: {
      name: 'svc_funding_opportunities',
      description:
        'An S06 funding-anomaly scan over BTC, ETH and SOL: funding and basis in basis points with a recorded decision each, and the assumptions block (raw context, never a profit claim). Paid.',
    },
    needs: ['market'],
    request: {},
    response: env(FUNDING_OPPORTUNITIES),
    errors: ['PROVIDER_DOWN', 'STALE_DATA'],
    handler: async (ctx) => {
      const answer = marketAnswer(await ctx.need('market').fundingOpportunities(ctx.payment!, ctx.unit!))
      return signRecords(ctx, answer, (answer.data as FundingOpportunities).opportunities.map((o) => o.decision))
    },
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
    errors: ['PROVIDER_DOWN', 'STALE_DATA'],
    handler: async (ctx) => {
      const answer = marketAnswer(await ctx.need('market').fundingAsset(ctx.params.asset as CanonicalAsset, ctx.payment!, ctx.unit!))
      const { decisions } = answer.data as FundingAsset
      return signRecords(ctx, answer, [decisions.S06_funding_anomaly, decisions.S07_funding_persistence])
    },
  },
]
