/**
 * JSON Schemas of request fields and response data, shared by routes. They drive validation, OpenAPI and the
 * route-walker test, so a shape is written once here.
 */
import { ENDPOINT_PRICES, PACKS, PLANS } from '../pricing.ts'

export type JsonSchema = Record<string, unknown>

const instant = { type: 'string', format: 'date-time' } as const
const nullableInstant = { type: ['string', 'null'], format: 'date-time' } as const
const nnum = { type: ['number', 'null'] } as const
const prob = { type: 'number', minimum: 0, maximum: 1 } as const

// ---------------------------------------------------------------- request fields

/** Spec: "Paid surfaces accept BTC, ETH, SOL (the canonical assets); any other value gives 400 VALIDATION." */
export const CANONICAL_ASSET = { type: 'string', enum: ['BTC', 'ETH', 'SOL'], description: 'canonical asset' } as const
/** Free market snapshot: any upper-case ticker; listing is checked against the universe (404 when absent). */
export const SYMBOL = { type: 'string', pattern: '^[A-Z0-9]{1,20}$', description: 'upper-case venue symbol' } as const
export const CHAIN = { type: 'string', enum: ['base'] } as const
export const ADDRESS = { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' } as const
export const UUID = { type: 'string', format: 'uuid' } as const
export const DECISION_ID_OR_PREFIX = {
  type: 'string',
  pattern: '^[0-9a-fA-F-]{8,36}$',
  description: 'decision id or a unique prefix of 8 or more characters',
} as const
export const QUESTION_ID = { type: 'string', pattern: '^S[0-9]{2}_[a-z0-9_]+$' } as const
export const HTTPS_URL = { type: 'string', format: 'uri', maxLength: 2048, pattern: '^https?://' } as const

export function objectOf(properties: Record<string, unknown>, required: string[] = [], additional = false): JsonSchema {
  return { type: 'object', additionalProperties: additional, required, properties }
}

// ---------------------------------------------------------------- records

export const FRESHNESS_ITEM = objectOf(
  { input: { type: 'string' }, ok: { type: 'boolean' }, staleness_budget_ms: { type: 'number' }, age_ms: nnum, last_success_at: nullableInstant },
  ['input', 'ok', 'staleness_budget_ms', 'age_ms', 'last_success_at'],
)

export const DECISION_RECORD = {
  type: 'object',
  required: [
    'decision_id', 'question_id', 'asset', 'subject', 'event', 'horizon', 'horizon_end', 'created_at', 'conditions',
    'probability', 'confidence', 'decision', 'action', 'input_hash', 'state_hash', 'policy_version', 'jev_version',
  ],
  properties: {
    decision_id: UUID,
    question_id: QUESTION_ID,
    asset: { type: ['string', 'null'] },
    subject: { type: ['string', 'null'] },
    event: { type: 'string' },
    horizon: { type: 'string', pattern: '^[0-9]+[smhd]$' },
    horizon_end: instant,
    created_at: instant,
    conditions: { type: 'array', items: { type: 'string' } },
    probability: prob,
    confidence: prob,
    decision: { type: 'string', description: 'verdict kind; refusals: stale_input, insufficient_confidence, suppress' },
    action: { type: 'string' },
    input_hash: { type: 'string' },
    state_hash: { type: 'string' },
    policy_version: { type: 'string' },
    jev_version: { type: 'string' },
    choice: objectOf(
      { choice_id: { type: 'string' }, distribution: { type: 'object', additionalProperties: prob } },
      ['choice_id', 'distribution'],
    ),
    payment_id: { type: 'string' },
  },
} as const

export const RESOLVED = objectOf(
  {
    status: { const: 'resolved' },
    decision_id: UUID,
    outcome: { enum: ['obtains', 'not', 'unresolvable'] },
    resolved_at: instant,
    statistic: nnum,
  },
  ['status', 'decision_id', 'outcome', 'resolved_at', 'statistic'],
)
export const PENDING = objectOf(
  { status: { const: 'pending' }, decision_id: UUID, horizon_end: instant },
  ['status', 'decision_id', 'horizon_end'],
)
export const RESOLUTION = { oneOf: [RESOLVED, PENDING] } as const

const verified = { oneOf: [{ type: 'boolean' }, { const: 'unknown' }] } as const
export const LINEAGE = objectOf(
  {
    decision: DECISION_RECORD,
    resolution: RESOLUTION,
    payment: objectOf({ rail: { enum: ['x402', 'credits', 'none'] }, payment_id: { type: ['string', 'null'] } }, ['rail', 'payment_id']),
    tape: objectOf(
      {
        sources: {
          type: 'array',
          items: objectOf(
            { input: { type: 'string' }, source: { type: 'string' }, from: nullableInstant, to: nullableInstant },
            ['input', 'source', 'from', 'to'],
          ),
        },
      },
      ['sources'],
    ),
    hashes: objectOf({ input_hash: { type: ['string', 'null'] }, state_hash: { type: ['string', 'null'] } }, ['input_hash', 'state_hash'], true),
    verify: objectOf({ input_ok: verified, state_ok: verified }, ['input_ok', 'state_ok'], true),
  },
  ['decision', 'resolution', 'payment', 'tape', 'hashes', 'verify'],
)

export const REPLAY_RESULT = objectOf(
  {
    decision_id: UUID,
    original_verdict: { type: 'string' },
    replayed_verdict: { type: 'string' },
    matched_rules: { type: 'array', items: { type: 'string' } },
    policy_version: { type: 'string' },
    deterministic: { const: true },
  },
  ['decision_id', 'original_verdict', 'replayed_verdict', 'matched_rules', 'policy_version', 'deterministic'],
)

const interval = { anyOf: [{ type: 'array', items: prob, minItems: 2, maxItems: 2 }, { type: 'null' }] }

/** GET /v1/priors (spec Computation rule 5). */
export const PRIORS = objectOf(
  {
    priors: {
      type: 'array',
      items: objectOf(
        {
          question_id: { type: 'string' },
          label: { type: 'string' },
          answer: { enum: ['probability', 'choice'] },
          prior: {
            anyOf: [
              objectOf(
                {
                  rate: prob,
                  interval,
                  method: { const: 'wilson-95' },
                  n: { type: 'integer', minimum: 1 },
                  successes: { type: 'integer', minimum: 0 },
                  verdict: { enum: ['published', 'insufficient_sample'] },
                  window: objectOf({ start: { type: ['string', 'null'] }, end: { type: ['string', 'null'] } }, ['start', 'end']),
                },
                ['rate', 'interval', 'method', 'n', 'successes', 'verdict', 'window'],
              ),
              { type: 'null' },
            ],
          },
          label_histogram: {
            anyOf: [
              { type: 'object', additionalProperties: objectOf({ count: { type: 'integer', minimum: 0 }, rate: prob, interval }, ['count', 'rate', 'interval']) },
              { type: 'null' },
            ],
          },
          reason: { type: ['string', 'null'] },
        },
        ['question_id', 'label', 'answer', 'prior', 'label_histogram', 'reason'],
      ),
    },
    n_floor: { type: 'integer', minimum: 1 },
    note: { type: 'string' },
  },
  ['priors', 'n_floor', 'note'],
)

/** GET /v1/policy/seal: the sealed ruleset; checksum = SHA-256 of its JCS (RFC 8785) canonical form. */
export const POLICY_SEAL = objectOf(
  { version: { type: 'string' }, checksum: { type: 'string', pattern: '^[0-9a-f]{64}$' }, ruleset: { type: 'object' } },
  ['version', 'checksum', 'ruleset'],
)

export const CALIBRATION = objectOf(
  {
    question_id: { type: ['string', 'null'] },
    subject: { type: ['string', 'null'] },
    buckets: {
      type: 'array',
      items: objectOf(
        { lo: prob, hi: prob, n: { type: 'integer', minimum: 0 }, mean_predicted: nnum, realized_frequency: nnum, published: { type: 'boolean' } },
        ['lo', 'hi', 'n', 'mean_predicted', 'realized_frequency', 'published'],
      ),
    },
    published: { type: 'boolean' },
    n: { type: 'integer', minimum: 0 },
    n_floor: { type: 'integer', minimum: 0 },
    note: { type: 'string' },
  },
  ['question_id', 'subject', 'buckets', 'published', 'n', 'n_floor', 'note'],
)

export const OPEN_CLOCKS = objectOf(
  {
    clocks: {
      type: 'array',
      items: objectOf(
        {
          question_id: QUESTION_ID,
          asset: { type: 'string' },
          question_label: { type: 'string' },
          decision_id: UUID,
          predicted: { type: ['number', 'string'] },
          horizon_end: instant,
        },
        ['question_id', 'asset', 'question_label', 'decision_id', 'predicted', 'horizon_end'],
      ),
    },
  },
  ['clocks'],
)

export const FEED = objectOf(
  {
    chips: {
      type: 'array',
      items: objectOf(
        {
          decision_id: UUID,
          question_id: QUESTION_ID,
          asset: { type: ['string', 'null'] },
          output: { enum: ['choice', 'probability'] },
          predicted: { type: ['string', 'number', 'null'] },
          realized: { type: ['string', 'null'] },
          match: { type: ['boolean', 'null'] },
          observed: { type: ['boolean', 'null'] },
          status: { enum: ['obtains', 'not', 'unresolvable'] },
          resolved_at: instant,
          horizon_end: instant,
        },
        ['decision_id', 'question_id', 'asset', 'output', 'predicted', 'realized', 'match', 'observed', 'status', 'resolved_at', 'horizon_end'],
      ),
    },
  },
  ['chips'],
)

export const MARKET_SNAPSHOT = objectOf(
  {
    asset: { type: 'string' },
    quote: objectOf(
      { price: nnum, bid: nnum, ask: nnum, mark: nnum, index: nnum, volume_24h: nnum },
      ['price', 'bid', 'ask', 'mark', 'index', 'volume_24h'],
    ),
    derived: objectOf({ mid: nnum, spread_bps: nnum }, ['mid', 'spread_bps']),
    provenance: objectOf(
      {
        source: { type: 'string' },
        provider: { type: 'string' },
        timestamp: instant,
        received_at: instant,
        age_ms: { type: 'number', minimum: 0 },
        quality: { type: 'string' },
      },
      ['source', 'provider', 'timestamp', 'received_at', 'age_ms', 'quality'],
    ),
  },
  ['asset', 'quote', 'derived', 'provenance'],
)

export const UNIVERSE = objectOf(
  {
    venue: { type: 'string' },
    as_of: instant,
    quality: { enum: ['real', 'degraded'] },
    assets: {
      type: 'array',
      items: objectOf(
        {
          symbol: { type: 'string' },
          mid: nnum,
          mark: nnum,
          change_24h: nnum,
          volume_24h: nnum,
          oi_usd: nnum,
          funding: nnum,
          max_leverage: nnum,
          delisted: { const: false },
        },
        ['symbol', 'mid', 'mark', 'change_24h', 'volume_24h', 'oi_usd', 'funding', 'max_leverage', 'delisted'],
      ),
    },
    count: { type: 'integer', minimum: 0 },
    total_live: { type: 'integer', minimum: 0 },
    truncated: { type: 'boolean' },
  },
  ['venue', 'as_of', 'quality', 'assets', 'count', 'total_live', 'truncated'],
)

export const MARKETCAP = objectOf(
  {
    as_of: instant,
    source: { type: 'string' },
    coins: {
      type: 'array',
      items: objectOf(
        {
          rank: { type: 'integer', minimum: 1 },
          symbol: { type: 'string' },
          name: { type: 'string' },
          market_cap_usd: { type: 'number', minimum: 0 },
          askable: { type: ['boolean', 'null'] },
        },
        ['rank', 'symbol', 'name', 'market_cap_usd', 'askable'],
      ),
    },
  },
  ['as_of', 'source', 'coins'],
)

export const LIQ_HOURS = objectOf(
  {
    asset: { type: 'string' },
    hours_observed: { type: 'integer', minimum: 0 },
    hours_required: { type: 'integer', minimum: 1 },
    figure: { type: 'string', pattern: '^[0-9]+/[0-9]+$' },
    ready: { type: 'boolean' },
  },
  ['asset', 'hours_observed', 'hours_required', 'figure', 'ready'],
)

export const SIGNALS = objectOf(
  {
    questions: {
      type: 'array',
      items: objectOf(
        { question_id: QUESTION_ID, label: { type: 'string' }, available: { type: 'boolean' }, reason: { type: ['string', 'null'] } },
        ['question_id', 'label', 'available', 'reason'],
      ),
    },
    sample_hours_by_asset: { type: 'object', additionalProperties: { type: 'number', minimum: 0 } },
  },
  ['questions', 'sample_hours_by_asset'],
)

export const PROVIDER_HEALTH = objectOf(
  {
    slug: { type: 'string' },
    kind: { type: 'string' },
    status: { enum: ['ok', 'degraded', 'down'] },
    last_success_at: nullableInstant,
    latency_ms: nnum,
    error_class: { type: ['string', 'null'] },
    critical: { type: 'boolean' },
  },
  ['slug', 'kind', 'status', 'last_success_at', 'latency_ms', 'error_class', 'critical'],
)

export const HEALTH = objectOf(
  {
    status: { enum: ['ok', 'degraded', 'down'] },
    uptime_s: { type: 'number', minimum: 0 },
    providers: { type: 'array', items: PROVIDER_HEALTH },
  },
  ['status', 'uptime_s', 'providers'],
)

export const PROVIDERS = objectOf({ providers: { type: 'array', items: PROVIDER_HEALTH } }, ['providers'])

const LADDER_GATE = objectOf(
  {
    kind: { type: 'string' },
    threshold: { type: 'number' },
    current: nnum,
    met: { type: 'boolean' },
    remaining: { type: 'number', minimum: 0 },
  },
  ['kind', 'threshold', 'current', 'met'],
)

export const LADDER = objectOf(
  {
    rung: { type: 'integer', minimum: 0 },
    multiplier: { type: 'number', minimum: 1 },
    effective_at: nullableInstant,
    gates: { type: 'array', items: LADDER_GATE },
    pending: {
      oneOf: [
        { type: 'null' },
        objectOf(
          { rung: { type: 'integer' }, crossed_at: instant, effective_at: instant, ms_remaining: { type: 'number', minimum: 0 } },
          ['rung', 'crossed_at', 'effective_at', 'ms_remaining'],
        ),
      ],
    },
    next: {
      oneOf: [
        { type: 'null' },
        objectOf(
          {
            rung: { type: 'integer' },
            evidence: objectOf({ threshold: { type: 'number' }, remaining: nnum }, ['threshold', 'remaining']),
            gates: { type: 'array', items: LADDER_GATE },
          },
          ['rung', 'evidence', 'gates'],
        ),
      ],
    },
  },
  ['rung', 'multiplier', 'effective_at', 'gates', 'pending', 'next'],
)

const priceEntry = (extra: Record<string, unknown>, req: string[]): JsonSchema =>
  objectOf(
    { credits: { type: 'integer', minimum: 0 }, usd: { type: 'string' }, amount_atomic: { type: 'string', pattern: '^[0-9]+$' }, ...extra },
    ['credits', 'usd', 'amount_atomic', ...req],
  )
const bucket = objectOf({ burst: { type: 'integer' }, refill_per_sec: { type: 'number' } }, ['burst', 'refill_per_sec'])

export const PRICING = objectOf(
  {
    currency: { const: 'USD' },
    credit_to_usd: { type: 'number', exclusiveMinimum: 0 },
    judgment_floor_credits: { type: 'integer' },
    rung: { type: 'integer', minimum: 0 },
    multiplier: { type: 'number', minimum: 1 },
    endpoints: {
      type: 'object',
      additionalProperties: false,
      required: Object.keys(ENDPOINT_PRICES),
      properties: Object.fromEntries(
        Object.keys(ENDPOINT_PRICES).map((k) => [
          k,
          priceEntry({ base_credits: { type: 'integer' }, summary: { type: 'string' }, routes: { type: 'array', items: { type: 'string' } } }, ['base_credits', 'summary', 'routes']),
        ]),
      ),
    },
    packs: {
      type: 'array',
      items: priceEntry(
        { pack_id: { enum: Object.keys(PACKS) }, pricing_key: { type: 'string' }, base_price_usd: { type: 'string' }, lot_days: { type: 'integer' } },
        ['pack_id', 'pricing_key', 'base_price_usd', 'lot_days'],
      ),
    },
    plans: {
      type: 'array',
      items: priceEntry(
        {
          plan_id: { enum: Object.keys(PLANS) },
          name: { type: 'string' },
          pricing_key: { type: 'string' },
          base_price_usd: { type: 'string' },
          cycle_days: { type: 'integer' },
          auto_renew: { const: false },
        },
        ['plan_id', 'name', 'pricing_key', 'base_price_usd', 'cycle_days', 'auto_renew'],
      ),
    },
    planned_addons: {
      type: 'array',
      items: objectOf({ key: { type: 'string' }, usd: { type: 'string' }, on_sale: { const: false } }, ['key', 'usd', 'on_sale']),
    },
    free_allowance: objectOf(
      { questions: { type: 'integer' }, credits_per_question: { type: 'integer' }, credits: { type: 'integer' }, eligible: { type: 'array', items: QUESTION_ID }, recharges: { const: false } },
      ['questions', 'credits_per_question', 'credits', 'eligible', 'recharges'],
    ),
    payment: objectOf(
      { rails: { type: 'array', items: { enum: ['x402', 'credits'] } }, scheme: { const: 'exact' }, network: { type: 'string' }, asset: ADDRESS, pay_to: { anyOf: [ADDRESS, { type: 'null' }] } },
      ['rails', 'scheme', 'network', 'asset', 'pay_to'],
    ),
    rate_limits: objectOf({ per_ip: bucket, per_payer: bucket }, ['per_ip', 'per_payer']),
    ladder: LADDER,
  },
  ['currency', 'credit_to_usd', 'judgment_floor_credits', 'rung', 'multiplier', 'endpoints', 'packs', 'plans', 'planned_addons', 'free_allowance', 'payment', 'rate_limits', 'ladder'],
)

/** Paid shapes the spec names only loosely; typed as objects until the engine work narrows them. */
export const OBJECT = { type: 'object' } as const

export const RISK_CANDIDATE = objectOf(
  {
    tx_hash: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' },
    log_index: { type: 'integer', minimum: 0 },
    block_time: instant,
    direction: { enum: ['in', 'out'] },
    asset: { type: 'string', minLength: 1, maxLength: 20 },
    amount: { type: 'number' },
    usd_value: { type: 'number' },
    counterparty: { type: ['string', 'null'] },
  },
  ['tx_hash', 'log_index', 'block_time', 'direction', 'asset', 'amount', 'usd_value', 'counterparty'],
)

export const RISK_ASSESSMENT = objectOf(
  {
    subject: objectOf({ kind: { enum: ['transaction', 'token', 'wallet', 'protocol'] }, address: ADDRESS }, ['kind', 'address']),
    risk: { enum: ['allow', 'review', 'block'] },
    allow_probability: prob,
    review_probability: prob,
    block_probability: prob,
    confidence: prob,
    decision: { type: 'string' },
    action: { type: 'string' },
    input_hash: { type: 'string' },
    policy_version: { type: 'string' },
    timestamp: instant,
    full: { type: 'object' },
  },
  ['subject', 'risk', 'allow_probability', 'review_probability', 'block_probability', 'confidence', 'decision', 'action', 'input_hash', 'policy_version', 'timestamp', 'full'],
  true,
)

// ---------------------------------------------------------------- wallet (spec: Wallet profile, state, positions; events)

const WALLET_STATE = { enum: ['WATCHING', 'ACCUMULATING', 'HIGH_CONVICTION', 'DISTRIBUTING', 'EXITING'] } as const
const SAMPLE_ADEQUACY = objectOf(
  {
    adequate: { type: 'boolean' },
    fills_30d: { type: 'integer', minimum: 0 },
    active_days_30d: { type: 'integer', minimum: 0 },
    min_fills_30d: { type: 'integer' },
    min_active_days_30d: { type: 'integer' },
    reason: { enum: ['no_activity', 'too_few_fills', 'too_few_active_days', null] },
  },
  ['adequate', 'fills_30d', 'active_days_30d', 'min_fills_30d', 'min_active_days_30d', 'reason'],
)
const WALLET_ID = { wallet: ADDRESS, chain: CHAIN }

export const WALLET_PROFILE = objectOf(
  {
    ...WALLET_ID,
    profile: objectOf(
      { state: WALLET_STATE, first_seen_at: nullableInstant, last_active_at: nullableInstant, net_flow_30d_usd: { type: 'number' }, sample_adequacy: SAMPLE_ADEQUACY },
      ['state', 'first_seen_at', 'last_active_at', 'net_flow_30d_usd', 'sample_adequacy'],
    ),
  },
  ['wallet', 'chain', 'profile'],
)

export const WALLET_STATE_RESPONSE = objectOf(
  { ...WALLET_ID, state: WALLET_STATE, since: nullableInstant, sample_adequacy: SAMPLE_ADEQUACY },
  ['wallet', 'chain', 'state', 'since', 'sample_adequacy'],
)

export const WALLET_POSITIONS = objectOf(
  {
    ...WALLET_ID,
    balances: {
      type: 'array',
      items: {
        type: 'object',
        required: ['kind', 'asset'],
        properties: {
          kind: { enum: ['collateral', 'perp_position'] },
          asset: { type: 'string' },
          account_value_usd: { type: 'number' },
          withdrawable_usd: { type: 'number' },
          size: { type: 'number' },
          side: { enum: ['long', 'short', 'flat'] },
          entry_price: nnum,
          notional_usd: { type: 'number' },
          unrealized_pnl_usd: { type: 'number' },
          liquidation_price: nnum,
          leverage: nnum,
          margin_used_usd: { type: 'number' },
        },
      },
    },
    provenance: objectOf(
      { source: { type: 'string' }, provider: { type: 'string' }, timestamp: instant, received_at: instant, age_ms: { type: 'number' }, quality: { type: 'string' } },
      ['source', 'provider', 'timestamp', 'received_at', 'age_ms', 'quality'],
    ),
  },
  ['wallet', 'chain', 'balances', 'provenance'],
)

/** Item fields are a spec gap; ours: docs/decisions.md. usd_value null = an unvalued transfer (kept, never dropped). */
export const WALLET_EVENT = objectOf(
  {
    event_id: { type: 'string' },
    time: instant,
    hash: { type: ['string', 'null'] },
    type: { type: 'string' },
    direction: { enum: ['in', 'out', 'internal', 'unknown'] },
    token: { type: ['string', 'null'] },
    amount: nnum,
    usd_value: nnum,
    valued: { type: 'boolean' },
    fee_usd: nnum,
    counterparty: { type: ['string', 'null'] },
  },
  ['event_id', 'time', 'hash', 'type', 'direction', 'token', 'amount', 'usd_value', 'valued', 'fee_usd', 'counterparty'],
)

export const WALLET_EVENTS = objectOf(
  {
    ...WALLET_ID,
    window: { type: 'string' },
    from: instant,
    to: instant,
    events: { type: 'array', items: WALLET_EVENT },
    count: { type: 'integer', minimum: 0 },
    unvalued_count: { type: 'integer', minimum: 0 },
    next_cursor: { type: ['string', 'null'] },
  },
  ['wallet', 'chain', 'window', 'from', 'to', 'events', 'count', 'unvalued_count', 'next_cursor'],
)
