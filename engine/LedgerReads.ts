/**
 * The free ledger reads (spec: "Reading a decision back is free"): answered from the ledger index, never by a live
 * model call. EngineServices implements it over the running engine; tests use in-memory doubles.
 */
import type { MaybePromise } from '../common/MaybePromise.ts'
import type { DecisionRead, FeedPage, LineageBundle, OpenClock, PendingResolution, ResolutionRecord } from './schemas.ts'

export interface LedgerReads {
  getDecision(decisionId: string): MaybePromise<DecisionRead | null>
  /** Newest per (question_id, asset) by timestamp desc then decision id; refusal rows included. */
  latestDecision(q: { question_id: string; asset: string }): Promise<DecisionRead | null>
  /** Accepts a full id or a unique prefix of 8+ characters; an ambiguous prefix throws ServiceError VALIDATION. */
  lineage(idOrPrefix: string): Promise<LineageBundle | null>
  resolution(decisionId: string): Promise<ResolutionRecord | PendingResolution | null>
  /** Soonest horizon_end first; degraded upstream throws ServiceError STALE_DATA or PROVIDER_DOWN. */
  openClocks(): MaybePromise<OpenClock[]>
  /**
   * Newest resolved first, one page: the chips after the position `cursor` names (a previous page's next_cursor; absent
   * or null: from the newest) and the cursor of the last one (null at the end); a cursor it did not issue is a 400
   * VALIDATION / INVALID_CURSOR.
   */
  feed(q: { limit: number; cursor?: string | null }): MaybePromise<FeedPage>
}
