/**
 * One record of the `billing.draws` topic (written by product/billing/DrawsJournal.ts, sunk by
 * pipeline/sinks/drawsTable.ts). Spec (Billing resources): "Draws journal | { payer, count, draws: [{ id, kind
 * (debit, credit or refund), amount (negative for a debit), reason, ref, lot_id, created_at, reversed_at (null unless
 * reversed) }] }". reversed_at is never stored: it is derived from the refund row that carries the debit's ref.
 */
import { randomUUID } from 'node:crypto'

/**
 * debit, credit, refund: the spec's draw kinds. answer: the receipt of a paid answer (amount 0, ref = the debit's
 * ref), journaled after the answer's effects and before the response; start-up recovery reverses debits without one.
 * Draw listings leave answer rows out.
 */
export type DrawKind = 'debit' | 'credit' | 'refund' | 'answer'

export interface DrawRow {
  id: string
  payer: string
  kind: DrawKind
  /** Credits; negative for a debit, positive for a credit or refund. */
  amount: number
  /** Credit rows: the lot's source (scout, pack.<id>, plan.<id>, grant, rate_lock). Debits: the pricing key. Refunds: reversal.<cause>. */
  reason: string
  /** Debit and refund: the payment id of the debit. Credit: the purchase payment id, grant ref or scout:<payer>. */
  ref: string
  lot_id: string
  /** ISO-8601 UTC. */
  created_at: string
  /** Credit rows: the lot's expiry (null = never). Other rows: null. */
  expires_at: string | null
}

export function newDrawId(): string {
  return `dr_${randomUUID()}`
}

export function encodeDraw(row: DrawRow): Buffer {
  return Buffer.from(JSON.stringify(row), 'utf8')
}

const KINDS = new Set<DrawKind>(['debit', 'credit', 'refund', 'answer'])

/** Decodes one journal record; throws naming the bad field (the sink stores such records among the rejects). */
export function decodeDraw(value: Buffer): DrawRow {
  const row = JSON.parse(value.toString('utf8')) as DrawRow
  const bad = (field: string) => new Error(`draws record: /${field} is invalid`)
  if (typeof row !== 'object' || row === null) throw new Error('draws record: not an object')
  for (const f of ['id', 'payer', 'reason', 'ref', 'lot_id', 'created_at'] as const) if (typeof row[f] !== 'string') throw bad(f)
  if (!KINDS.has(row.kind)) throw bad('kind')
  if (!Number.isSafeInteger(row.amount)) throw bad('amount')
  if ((row.kind === 'debit') !== row.amount < 0 || (row.kind === 'answer') !== (row.amount === 0)) throw bad('amount')
  if (row.expires_at !== null && typeof row.expires_at !== 'string') throw bad('expires_at')
  if (Number.isNaN(Date.parse(row.created_at))) throw bad('created_at')
  return row
}
