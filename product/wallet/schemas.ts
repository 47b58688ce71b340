/**
 * The wallet domain's public shapes (spec: Wallet profile, state, positions; events), each one TypeBox schema with its
 * type inferred from it.
 */
import { Address, Chain, Instant, Nullable, NullableInstant, NullableNumber, NullableString, StringEnum, Type, type Static } from '../../common/schema.ts'
import { WALLET_STATES } from '../../models/account/WalletStateMachine.ts'

const Strict = { additionalProperties: false } as const

/** Spec: "Wallet state machine positions, in order: WATCHING, ACCUMULATING, HIGH_CONVICTION, DISTRIBUTING, EXITING." */
const WalletState = StringEnum(WALLET_STATES)

export const SAMPLE_ADEQUACY = Type.Object(
  {
    adequate: Type.Boolean(),
    fills_30d: Type.Integer({ minimum: 0 }),
    active_days_30d: Type.Integer({ minimum: 0 }),
    min_fills_30d: Type.Integer(),
    min_active_days_30d: Type.Integer(),
    reason: Nullable(StringEnum(['no_activity', 'too_few_fills', 'too_few_active_days'])),
  },
  Strict,
)

const WalletId = { wallet: Address, chain: Chain }

/** Spec: "{ wallet, chain, profile: { state, first_seen_at, last_active_at, net_flow_30d_usd, sample_adequacy } }". */
export const WALLET_PROFILE = Type.Object(
  {
    ...WalletId,
    profile: Type.Object(
      { state: WalletState, first_seen_at: NullableInstant, last_active_at: NullableInstant, net_flow_30d_usd: Type.Number(), sample_adequacy: SAMPLE_ADEQUACY },
      Strict,
    ),
  },
  Strict,
)

/** Spec: "{ wallet, chain, state, since, sample_adequacy }". */
export const WALLET_STATE = Type.Object({ ...WalletId, state: WalletState, since: NullableInstant, sample_adequacy: SAMPLE_ADEQUACY }, Strict)

/** Spec: "{ wallet, chain, balances, provenance }". */
export const WALLET_POSITIONS = Type.Object(
  {
    ...WalletId,
    balances: Type.Array(
      Type.Object({
        kind: StringEnum(['collateral', 'perp_position']),
        asset: Type.String(),
        account_value_usd: Type.Optional(Type.Number()),
        withdrawable_usd: Type.Optional(Type.Number()),
        size: Type.Optional(Type.Number()),
        side: Type.Optional(StringEnum(['long', 'short', 'flat'])),
        entry_price: Type.Optional(NullableNumber),
        notional_usd: Type.Optional(Type.Number()),
        unrealized_pnl_usd: Type.Optional(Type.Number()),
        liquidation_price: Type.Optional(NullableNumber),
        leverage: Type.Optional(NullableNumber),
        margin_used_usd: Type.Optional(Type.Number()),
      }),
    ),
    provenance: Type.Object(
      { source: Type.String(), provider: Type.String(), timestamp: Instant, received_at: Instant, age_ms: Type.Number(), quality: Type.String() },
      Strict,
    ),
  },
  Strict,
)

/** Item fields are a spec gap; ours: docs/decisions.md. usd_value null = an unvalued transfer (kept, never dropped). */
export const WALLET_EVENT = Type.Object(
  {
    /** Stable id within the wallet: '<time>:<hash>:<type>'. */
    event_id: Type.String(),
    time: Instant,
    hash: NullableString,
    type: Type.String(),
    direction: StringEnum(['in', 'out', 'internal', 'unknown']),
    token: NullableString,
    amount: NullableNumber,
    /** null when unvalued. */
    usd_value: NullableNumber,
    valued: Type.Boolean(),
    fee_usd: NullableNumber,
    counterparty: NullableString,
  },
  Strict,
)
export type WalletEventItem = Static<typeof WALLET_EVENT>

export const WALLET_EVENTS = Type.Object(
  {
    ...WalletId,
    window: Type.String(),
    from: Instant,
    to: Instant,
    events: Type.Array(WALLET_EVENT),
    count: Type.Integer({ minimum: 0 }),
    unvalued_count: Type.Integer({ minimum: 0 }),
    next_cursor: NullableString,
  },
  Strict,
)
