/**
 * The connector's timings for a session on a clock running `speed` times the wall clock (tests and benches against the
 * local venue on a ScaledClock): clock-time waits (the reorder window, the candle grace, the funding delay, the hold,
 * the stale threshold) are the wall durations they stand for in a real session scaled up, so the venue's frames (every
 * 50 wall ms) still fit in them; network schedules (polls, retries, pings, reconnects) are wall time, shortened but
 * within the venue's real limits: REST weight 1200 a minute and 30 new websockets a minute.
 */
import type { HyperliquidConnectorOptions } from './HyperliquidConnector.ts'
import type { RestWeightBudgetOptions } from '../../ingest/hyperliquid/RestWeightBudget.ts'

export function compressedTimings(speed: number) {
  return {
    reorderWindowMs: 150 * speed,
    candleGraceMs: 300 * speed,
    fundingDelayMs: 100 * speed,
    // The REST budget is per wall minute, so a compressed repair may wait that long for it: the hold allows for it.
    maxHoldMs: 90_000 * speed,
    staleAfterMs: 120_000 + 150 * speed,
    // A wall minute of REST budget covers a venue hour or two here: polls are spaced so the bars and settlements of
    // those hours fit in it beside them.
    pollMs: 8000,
    tickMs: 20,
    retryBaseMs: 200,
    retryCapMs: 3000,
    stream: { pingAfterMs: 800, pongTimeoutMs: 600, backoffBaseMs: 200, backoffCapMs: 4000, connectTimeoutMs: 2000 },
  } satisfies Partial<HyperliquidConnectorOptions>
}

/**
 * The REST budget of such a session: the weight per wall minute stays the venue's, but the pause after consecutive 429s
 * is capped like the other wall schedules (its real cap, a wall minute, is two venue hours at 120x: longer than the hold).
 */
export function compressedRestBudget(): RestWeightBudgetOptions {
  return { backoffBaseMs: 200, backoffCapMs: 3000 }
}
