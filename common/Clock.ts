/**
 * Time as downstream code sees it. Processors take a `Clock` and call now() instead of Date.now(), so a replayed
 * tape produces the same decisions and outcomes as the live feed it records, at any replay speed
 * (ingest/VirtualClock.ts), and tests can hold time still.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number
}

/** Wall-clock time, for live operation. */
export const systemClock: Clock = { now: () => Date.now() }
