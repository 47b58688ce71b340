/**
 * What a question's resolver reads: the ticks of one resolution window in event time, as TickHistory builds them
 * (and, for account-scoped questions, the subject wallet over the window). Re-deriving the event from the same input
 * grammar as the decision (spec, What the service does 3) needs nothing else.
 */

/** Read access to the ticks of a resolution window, in event time. */
export interface ResolutionWindow {
  asset: string
  start: number
  end: number
  /** Bars whose close lies in (start, end], ascending. */
  bars: ReadonlyArray<{ close_time: number; open: number; high: number; low: number; close: number; interval_ms: number }>
  /** Funding settlements with time in (start, end], ascending, rates normalised to per-hour. */
  funding: ReadonlyArray<{ time: number; rate_per_hour: number; interval_hours: number }>
  /** Last price at or before `start` (the reference), if known. */
  startPrice: number | null
  /** True when the data source covers the whole window (no gap larger than the source's cadence). */
  complete: boolean
  /**
   * The same for the funding series, which has its own cadence (a window can have complete bars and no funding
   * source at all, or the reverse); funding questions resolve unresolvable when it is false.
   */
  fundingComplete: boolean
  /** Account-scoped questions (S09..S11) only: the subject wallet measured over (start, end]. */
  account?: AccountWindow
}

/**
 * What an account-scoped question's resolver reads: the subject wallet over (start, end], derived by the same grammar
 * as its decision-time features (models/account/WalletFeatures.ts).
 */
export interface AccountWindow {
  address: string
  /** True when the provider answered for the whole window. */
  complete: boolean
  /** Wallet state machine position at `end` (models/account/WalletStateMachine.ts). */
  state_at_end: string | null
  /** Valued net transfer flow over (start, end], USD, and the counts behind it (unvalued transfers are kept). */
  net_flow_usd: number
  valued_transfers: number
  unvalued_transfers: number
  /** Liquidations of the wallet in (start, end]. */
  liquidations: number
}
