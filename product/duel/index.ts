/**
 * The duel's public face for other domains (test/layers.test.ts): the call events the Arena and the funnel react to.
 */
export type { CallEvents, CallGraded, CallHistoryFold, CallLocked, CallSide } from './CallEvents.ts'
export { byResolution } from './CallEvents.ts'
export { handleOf } from './handles.ts'
/** A call as the routes show it (the payer's own list, product/history, lists them beside the asks). */
export { CALL_VIEW, type CallView } from './schemas.ts'
