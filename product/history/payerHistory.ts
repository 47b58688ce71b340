/**
 * A payer's own decisions and calls (GET /v1/decisions/mine): the decisions it asked and paid for (the delivery ask
 * record, written in the paid call's unit of work, so it exists exactly when the paid decision does) and the calls it
 * locked (the duel), one list newest first. The decision of an ask comes from the free ledger reads.
 *
 * Order and cursor: (at, id) descending, at being the decision's created_at or the call's locked_at. Neither key
 * changes once written and (kind-prefixed ids apart) they are unique, so a walk lists each row present when it began
 * exactly once; rows added meanwhile land ahead of the walk (or, a late one, behind it: listed once).
 */
import { decodePosition, pageOf } from '../../common/pageCursor.ts'
import type { LedgerReads } from '../../engine/LedgerReads.ts'
import type { DecisionRecord } from '../../engine/schemas.ts'
import type { CallView } from '../duel/index.ts'
import type { HistoryItem, PayerHistory } from './schemas.ts'

const HISTORY_CURSOR = 'mine'

export interface HistorySources {
  /** The decision ids the payer asked (any order). */
  asks: (payer: string) => readonly string[]
  /** The payer's calls newest first strictly after `before`, at most `limit`, and its total (hot or from Parquet). */
  calls: (payer: string, before: readonly [string, string] | null, limit: number) => Promise<{ total: number; items: CallView[] }>
  ledger: Pick<LedgerReads, 'getDecision' | 'resolution'>
}

const newerFirst = (a: { at: string; id: string }, b: { at: string; id: string }): number =>
  a.at < b.at ? 1 : a.at > b.at ? -1 : a.id < b.id ? 1 : a.id > b.id ? -1 : 0

export async function payerHistory(src: HistorySources, payerAddress: string, q: { limit: number; cursor: string | null }): Promise<PayerHistory> {
  const payer = payerAddress.toLowerCase()
  const before = q.cursor === null ? null : decodePosition(HISTORY_CURSOR, q.cursor, ['string', 'string'] as const)
  const after = (row: { at: string; id: string }) => before === null || newerFirst(row, { at: before[0], id: before[1] }) > 0
  const askIds = src.asks(payer)
  // One more call than the page holds, so the merge knows whether rows remain after it.
  const calls = await src.calls(payer, before === null ? null : [before[0], before[1]], q.limit + 1)
  // An ask's time is its decision's: read every ask's record (an in-memory index read), then page.
  const asks: { at: string; id: string; decision: DecisionRecord }[] = []
  for (const id of askIds) {
    const read = await src.ledger.getDecision(id)
    // An ask whose decision the ledger has not read back yet is listed once it has (the ask and the decision are one unit).
    if (read) asks.push({ at: read.record.created_at, id, decision: read.record })
  }
  const rows: ({ kind: 'ask'; at: string; id: string; ask: (typeof asks)[number] } | { kind: 'call'; at: string; id: string; call: CallView })[] = [
    ...asks.map((a) => ({ kind: 'ask' as const, at: a.at, id: a.id, ask: a })),
    ...calls.items.map((c) => ({ kind: 'call' as const, at: c.locked_at, id: c.call_id, call: c })),
  ]
    .filter(after)
    .sort(newerFirst)
  const page = pageOf(HISTORY_CURSOR, rows, q.limit, (r) => [r.at, r.id])
  const items: HistoryItem[] = []
  for (const r of page.items) {
    if (r.kind === 'call') {
      const c = r.call
      items.push({ kind: 'call', id: c.call_id, at: c.locked_at, decision_id: c.decision_id, question_id: c.question_id, asset: c.asset, horizon_end: c.horizon_end, ask: null, call: c })
      continue
    }
    const d = r.ask.decision
    const res = await src.ledger.resolution(d.decision_id)
    const resolved = res !== null && res.status === 'resolved' ? res : null
    items.push({
      kind: 'ask', id: d.decision_id, at: d.created_at, decision_id: d.decision_id, question_id: d.question_id, asset: d.asset, horizon_end: d.horizon_end,
      ask: {
        probability: d.probability, confidence: d.confidence, decision: d.decision, action: d.action, choice_id: d.choice?.choice_id ?? null,
        status: resolved ? 'resolved' : 'pending', outcome: resolved ? resolved.outcome : null, resolved_at: resolved ? resolved.resolved_at : null,
      },
      call: null,
    })
  }
  return { payer, asks: asks.length, calls: calls.total, items, next_cursor: page.next_cursor }
}
