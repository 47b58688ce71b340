/**
 * The service's units of time in milliseconds, defined once (issue 29: the same constants were defined 26 times).
 * Event time, wall time and venue time are all measured in ms since the epoch.
 */
export const SECOND_MS = 1_000
export const MINUTE_MS = 60 * SECOND_MS
export const HOUR_MS = 60 * MINUTE_MS
export const DAY_MS = 24 * HOUR_MS
export const WEEK_MS = 7 * DAY_MS
