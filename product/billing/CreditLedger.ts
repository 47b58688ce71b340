/**
 * Credit balances per payer, held as expiring lots and restored on start from the draws journal (its state snapshot and
 * the journal's tail, or the whole journal).
 *
 * Spec (Limits): "Free allowance | 3 entry-tier questions per payer address, 1,000 credits each (3000 credits total),
 * one time, never recharges | S01, S05, S06"; "Pack credits lot | 60-day lifetime"; "Plan cycle | 30 days, no auto
 * renewal". Spec (Authentication 3): "When the balance cannot cover the price, the response is the standard x402
 * challenge with detail.reason INSUFFICIENT_BALANCE and fields balance and required_credits. A call yielding neither
 * a decision nor a typed refusal reverses its debit."
 *
 * A paid call is two steps (the payment seam settles after the handler, like the x402 rail):
 *   hold()          before the handler: reserves the price on concrete lots (synchronously, so concurrent calls of one
 *                   payer are serialized by construction and can never reserve more than the balance);
 *   settleHoldIn()  after the handler produced a charged answer: its debit rows join the call's unit of work, and
 *                   become the balance once the unit (debit, answer, receipt) is durable;
 *   release()       otherwise (error, 5xx, a re-served repeat, a refusal on the free allowance): drops the
 *                   reservation, no row is written.
 * A crash between hold and commit loses only the in-memory reservation: no debit exists without the answer it paid
 * for, so no recovery pass is needed (docs/decisions.md). Reversals of committed debits (operator action) are new
 * refund rows keyed by the debit's ref, applied at most once.
 *
 * Lot order: an entry-tier call draws one free-allowance question (1,000 credits) first when one is left; otherwise
 * paid lots soonest-expiry-first (never-expiring last, then oldest first). Lots expired at hold time are not
 * spendable (the service clock decides).
 *
 * Followed (issue 32; pipeline/state/CheckpointedFollowers.ts): the ledger follows the draws journal for as long as
 * it is open, so the rows another instance of a cluster writes reach this one's balances within the follower's fetch
 * wait (docs/decisions.md: the staleness bound), and its own writes are applied at acknowledgement (skipOwnWrites).
 * Only the owner of a payer's partition holds and debits for that payer (product/billing/PayerOwnership.ts); every
 * instance reads every payer. Checkpointed (issue 31): the state is every payer's rows in journal order (lots,
 * debits and the draws view derive from them), snapshotted at the follower's positions once no own write is
 * unsettled; a row is applied at most once by its id, so a tail that re-reads rows changes nothing and
 * (snapshot + tail) == the full rebuild.
 */
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import { childLogger } from '../../common/logger.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import { encodeCursor } from '../../common/Cursor.ts'
import { CURSOR_FIELD, decodePosition } from '../../common/pageCursor.ts'
import type { Clock } from '../../common/Clock.ts'
import { JUDGMENT_FLOOR_CREDITS } from './pricing.ts'
import { QUESTIONS, questionById } from '../../models/questions/index.ts'
import type { Journal } from '../../pipeline/journal/Journal.ts'
import { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import { DRAWS, newDrawId, type DRAW_RECORD_SCHEMA, type DrawRow } from '../../pipeline/records/drawRecord.ts'
import { CheckpointedFollowers, followOwnWrites } from '../../pipeline/state/CheckpointedFollowers.ts'
import type { RestoredState } from '../../pipeline/state/restoreState.ts'
import type { CheckpointSettings, StateStore } from '../../pipeline/state/StateStore.ts'
import { DAY_MS } from '../../common/time.ts'

/** The credit draws journal on the event log (pipeline/records/drawRecord.ts). */
export type DrawsJournal = Journal<typeof DRAW_RECORD_SCHEMA>

export const SCOUT_QUESTIONS = 3
export const SCOUT_CREDITS_PER_QUESTION = JUDGMENT_FLOOR_CREDITS
export const SCOUT_CREDITS = SCOUT_QUESTIONS * SCOUT_CREDITS_PER_QUESTION

/** Spec (Limits): the free allowance applies to S01, S05, S06 — the questions the registry marks entryTier. */
export function isEntryTier(questionId: string | null | undefined): boolean {
  return !!questionId && questionById(questionId)?.entryTier === true
}

/** The entry-tier question ids, for messages that say what the free allowance covers. */
export const ENTRY_TIER_QUESTIONS: readonly string[] = QUESTIONS.filter((q) => q.entryTier).map((q) => q.id)

export interface Lot {
  lot_id: string
  /** The credit row's reason: scout, pack.<id>, plan.<id>, grant, rate_lock. */
  source: string
  ref: string
  granted: number
  /** Committed balance (grant minus committed debits plus refunds). */
  remaining: number
  /** Reserved by holds not yet committed or released. */
  reserved: number
  created_at: number
  expires_at: number | null
}

interface DebitState {
  payer: string
  rows: DrawRow[]
  refunds: DrawRow[]
  answered: boolean
}

interface PayerState {
  lots: Map<string, Lot>
  /** Every row of this payer, in journal order. */
  rows: DrawRow[]
  scoutLot: string | null
  /** Credit rows by `${reason}|${ref}` (grant and purchase idempotency). */
  credits: Map<string, DrawRow>
}

export interface CreditOptions {
  /** The credit row's reason: scout, pack.<id>, plan.<id>, grant, rate_lock. */
  reason: string
  ref: string
  /** null: never expires. */
  lifetimeDays: number | null
}

export interface Hold {
  readonly kind: 'hold'
  readonly payment_id: string
  readonly payer: string
  readonly key: string
  readonly at: number
  /** True when the hold uses a free-allowance question. */
  readonly scout: boolean
  readonly parts: ReadonlyArray<{ lot_id: string; credits: number }>
  /** held: reserved; settling: its debit is in a unit of work not yet durable; committed: debited; released: dropped. */
  state: 'held' | 'settling' | 'committed' | 'released'
}

export interface Shortfall {
  kind: 'short'
  /** The payer's balance as GET /v1/billing/credits reports it (free allowance included). */
  balance: number
  /** The part of it that can pay this call: the free allowance pays entry-tier questions only. */
  spendable: number
  /** Free-allowance credits in the balance that this call may not use (non-entry questions); 0 otherwise. */
  freeAllowanceExcluded: number
  required: number
}

export interface LotView {
  lot_id: string
  source: string
  granted: number
  remaining: number
  created_at: string
  expires_at: string | null
  expired: boolean
  /** 'entry' for the free allowance (entry-tier questions only), else 'any'. */
  usable_on: 'entry' | 'any'
}

export interface DrawView extends DrawRow {
  reversed_at: string | null
}

const iso = (ms: number) => new Date(ms).toISOString()

/** The snapshot rows' schema: one draw row each (DRAW_RECORD_SCHEMA), payers in key order, each payer's in journal order. */
export const CREDIT_STATE_SCHEMA = 1

/** The draws list's cursor scope: its positions are [place in the payer's rows, row id]. */
const DRAWS_CURSOR = 'draws'

export class CreditLedger implements StateStore {
  readonly name = 'billing.credits'
  readonly schema = CREDIT_STATE_SCHEMA
  private readonly payers = new Map<string, PayerState>()
  /** Ids of the rows applied: a row read again (a snapshot's positions lag behind own writes) is not applied twice. */
  private readonly appliedIds = new Set<string>()
  /** The follower of the draws journal, with the state's snapshots. */
  private followers: CheckpointedFollowers | null = null
  private readonly debits = new Map<string, DebitState>()
  /** Refunds being written, by debit ref: a second reverse waits for the first instead of writing again. */
  private readonly reversing = new Map<string, Promise<DrawRow[]>>()
  /** Scout grants being written, by payer. */
  private readonly scouting = new Map<string, Promise<void>>()

  private constructor(
    readonly journal: DrawsJournal,
    private readonly clock: Clock,
  ) {}

  /**
   * Restores every balance (the newest state snapshot + the journal's tail, or the journal from the beginning) and
   * keeps following the journal (rows other instances write), then (recovery, when `recover`) reverses every debit
   * that has neither an answer receipt nor a refund: the process stopped between the debit and the answer, so the
   * payer never got what the debit paid for. In a cluster recovery is the partition owner's (PayerOwnership), never
   * every instance's at its start: two would each refund.
   */
  static async open(
    journal: DrawsJournal,
    clock: Clock,
    options: { recover?: boolean; checkpoints?: CheckpointSettings | null; logger?: Logger; group?: string } = {},
  ): Promise<CreditLedger> {
    const ledger = new CreditLedger(journal, clock)
    const logger = options.logger ?? childLogger('credits')
    ledger.followers = await CheckpointedFollowers.open({
      log: journal.log,
      store: ledger,
      checkpoints: options.checkpoints ?? null,
      logger,
      journals: [followOwnWrites(journal, { group: options.group ?? 'svc.credits', what: 'draw', logger }, (row) => ledger.apply(row))],
    })
    if (options.recover ?? true) ledger.recovered = await ledger.recover()
    return ledger
  }

  /** How the state started and a snapshot on demand; null without checkpoint settings (memory only). */
  get checkpoints(): { restored: RestoredState; checkpoint(): Promise<unknown> } | null {
    const f = this.followers
    return f?.restored ? { restored: f.restored, checkpoint: () => f.checkpoint() } : null
  }

  /**
   * Resolves once the ledger has applied every row the journal held when this was called: what a previous owner of a
   * payer wrote is in the balances before this instance holds for that payer (PayerOwnership, after a failover).
   */
  caughtUp(signal?: AbortSignal): Promise<void> {
    return this.followers ? this.followers.caughtUp(this.journal.log, signal) : Promise.resolve()
  }

  /** Stops following (one final state snapshot first); call before the journal closes. */
  async close(): Promise<void> {
    const f = this.followers
    this.followers = null
    await f?.stop()
  }

  *rows(): Iterable<unknown> {
    // Fields in one fixed order: a row applied live and the same row decoded from the log are equal rows.
    for (const key of [...this.payers.keys()].sort()) {
      for (const r of this.payers.get(key)!.rows) {
        yield { id: r.id, payer: r.payer, kind: r.kind, amount: r.amount, reason: r.reason, ref: r.ref, lot_id: r.lot_id, created_at: r.created_at, expires_at: r.expires_at }
      }
    }
  }

  load(rows: readonly unknown[]): void {
    if (this.appliedIds.size > 0) throw new Error('the credit ledger already holds rows')
    const checked = rows.map((r, i) => {
      try {
        return DRAWS.check(r)
      } catch (err) {
        throw new Error(`row ${i}: ${(err as Error).message}`)
      }
    })
    const ids = new Set(checked.map((r) => r.id))
    if (ids.size !== checked.length) throw new Error('a row id appears twice')
    for (const row of checked) this.apply(row)
  }

  /** Debit refs reversed by the start-up recovery pass. */
  recovered: string[] = []

  /** Reverses the unanswered debits (open()) of the payers `mine` selects (default: all; a partition owner: its own). */
  async recover(mine: (payer: string) => boolean = () => true): Promise<string[]> {
    const refs: string[] = []
    for (const [ref, d] of this.debits) if (d.rows.length > 0 && d.refunds.length === 0 && !d.answered && mine(d.payer)) refs.push(ref)
    for (const ref of refs) await this.reverse(this.debits.get(ref)!.payer, ref, 'unanswered')
    return refs
  }

  static payerKey(payer: string): string {
    return payer.toLowerCase()
  }

  private state(payer: string): PayerState {
    const key = CreditLedger.payerKey(payer)
    let s = this.payers.get(key)
    if (!s) {
      s = { lots: new Map(), rows: [], scoutLot: null, credits: new Map() }
      this.payers.set(key, s)
    }
    return s
  }

  /** Applies one journal row to the in-memory state: the only way balances change (live and on replay alike). */
  private apply(row: DrawRow): void {
    if (this.appliedIds.has(row.id)) return
    this.appliedIds.add(row.id)
    const s = this.state(row.payer)
    s.rows.push(row)
    if (row.kind === 'credit') {
      s.lots.set(row.lot_id, {
        lot_id: row.lot_id, source: row.reason, ref: row.ref, granted: row.amount, remaining: row.amount, reserved: 0,
        created_at: Date.parse(row.created_at), expires_at: row.expires_at === null ? null : Date.parse(row.expires_at),
      })
      if (row.reason === 'scout') s.scoutLot = row.lot_id
      s.credits.set(`${row.reason}|${row.ref}`, row)
      return
    }
    const lot = s.lots.get(row.lot_id)
    if (lot) lot.remaining += row.amount
    let d = this.debits.get(row.ref)
    if (!d) {
      d = { payer: CreditLedger.payerKey(row.payer), rows: [], refunds: [], answered: false }
      this.debits.set(row.ref, d)
    }
    if (row.kind === 'debit') d.rows.push(row)
    else if (row.kind === 'refund') d.refunds.push(row)
    else d.answered = true
  }

  private write(rows: DrawRow[]): Promise<void> {
    // The journal counts the write unsettled until this effect ran (no snapshot in between: CheckpointedFollowers).
    return this.journal.append(rows).then(() => {
      for (const row of rows) this.apply(row)
    })
  }

  /** A unit of work's effects for rows of this ledger (the journal counts the unit unsettled until they ran). */
  private inUnit(effects: { applied: () => void; aborted?: () => void }): { applied: () => void; aborted: (err?: unknown) => void } {
    return { applied: effects.applied, aborted: () => effects.aborted?.() }
  }

  private spendable(lot: Lot, at: number): boolean {
    return lot.expires_at === null || lot.expires_at > at
  }

  private available(lot: Lot, at: number): number {
    return this.spendable(lot, at) ? Math.max(0, lot.remaining - lot.reserved) : 0
  }

  /** Spendable credits now (free allowance included), net of reservations. */
  balance(payer: string, at = this.clock.now()): number {
    let sum = 0
    for (const lot of this.state(payer).lots.values()) sum += this.available(lot, at)
    return sum
  }

  /**
   * Reserves `credits` for one call. Entry-tier calls take one free-allowance question when one is left (it covers
   * the call at any rung); otherwise paid lots soonest-expiry-first. Synchronous: the reservation is in place before
   * any other call of this payer is looked at.
   */
  hold(payer: string, credits: number, opts: { key: string; entryTier: boolean; at?: number; paymentId?: string }): Hold | Shortfall {
    const at = opts.at ?? this.clock.now()
    const s = this.state(payer)
    const scout = s.scoutLot ? s.lots.get(s.scoutLot) : undefined
    if (opts.entryTier && scout && this.available(scout, at) >= SCOUT_CREDITS_PER_QUESTION) {
      scout.reserved += SCOUT_CREDITS_PER_QUESTION
      return this.newHold(payer, opts.key, at, true, [{ lot_id: scout.lot_id, credits: SCOUT_CREDITS_PER_QUESTION }], opts.paymentId)
    }
    const lots = [...s.lots.values()]
      .filter((l) => l.lot_id !== s.scoutLot && this.available(l, at) > 0)
      .sort((a, b) => (a.expires_at ?? Infinity) - (b.expires_at ?? Infinity) || a.created_at - b.created_at)
    const total = lots.reduce((sum, l) => sum + this.available(l, at), 0)
    if (total < credits) {
      const excluded = scout && !opts.entryTier ? this.available(scout, at) : 0
      return { kind: 'short', balance: this.balance(payer, at), spendable: total, freeAllowanceExcluded: excluded, required: credits }
    }
    const parts: Array<{ lot_id: string; credits: number }> = []
    let left = credits
    for (const lot of lots) {
      if (left === 0) break
      const take = Math.min(left, this.available(lot, at))
      lot.reserved += take
      parts.push({ lot_id: lot.lot_id, credits: take })
      left -= take
    }
    return this.newHold(payer, opts.key, at, false, parts, opts.paymentId)
  }

  private newHold(payer: string, key: string, at: number, scout: boolean, parts: Hold['parts'], paymentId?: string): Hold {
    return { kind: 'hold', payment_id: paymentId ?? `cr_${randomUUID()}`, payer: CreditLedger.payerKey(payer), key, at, scout, parts, state: 'held' }
  }

  private unreserve(hold: Hold): void {
    const s = this.state(hold.payer)
    for (const p of hold.parts) {
      const lot = s.lots.get(p.lot_id)
      if (lot) lot.reserved -= p.credits
    }
  }

  /** Drops a hold without writing anything. Idempotent. */
  release(hold: Hold): void {
    if (hold.state !== 'held') return
    hold.state = 'released'
    this.unreserve(hold)
  }

  /**
   * The credits rail's rules for one paid call (spec, Authentication 3; Limits, Free allowance): credit purchases
   * (billing.* keys) are never paid from credits (PLAN_NOT_RECHARGEABLE: "the free allowance is not rechargeable");
   * an entry-tier question (S01, S05, S06) takes a free-allowance question first; otherwise the price is reserved on
   * paid lots, or the shortfall is returned for the caller's challenge.
   */
  reserve(payer: string, price: { key: string; credits: number }, questionId: string | null | undefined, paymentId?: string): Hold | Shortfall {
    if (price.key.startsWith('billing.')) {
      throw new ServiceError('PLAN_NOT_RECHARGEABLE', {
        detail: { pricing_key: price.key, rail: 'credits', settlement_note: 'credit purchases are paid by x402, never from credits' },
      })
    }
    return this.hold(payer, price.credits, { key: price.key, entryTier: isEntryTier(questionId), ...(paymentId ? { paymentId } : {}) })
  }

  /**
   * Captures a reservation once the answer exists, inside the paid call's unit of work: the debit rows join the unit
   * and become the balance only once the unit is durable (with the answer and its receipt, atomically); if the unit
   * is dropped or fails, the reservation is released and nothing was charged. A refusal answered from the free
   * allowance is released instead ("a refusal never consumes a question"). Returns what is charged and the balance
   * once the unit is durable (the reservation already holds those credits).
   */
  settleHoldIn(hold: Hold, answer: { refusal: boolean }, unit: UnitOfWork): { charged: number; balance: number } {
    if (hold.state !== 'held') throw new Error(`hold ${hold.payment_id} is already ${hold.state}`)
    if (hold.scout && answer.refusal) {
      this.release(hold)
      return { charged: 0, balance: this.balance(hold.payer) }
    }
    const created = iso(this.clock.now())
    const rows: DrawRow[] = hold.parts.map((p) => ({
      id: newDrawId(), payer: hold.payer, kind: 'debit', amount: -p.credits, reason: hold.key, ref: hold.payment_id,
      lot_id: p.lot_id, created_at: created, expires_at: null,
    }))
    hold.state = 'settling'
    unit.add(this.journal, rows, this.inUnit({
      applied: () => {
        this.unreserve(hold)
        hold.state = 'committed'
        for (const row of rows) this.apply(row)
      },
      aborted: () => {
        if (hold.state !== 'settling') return
        this.unreserve(hold)
        hold.state = 'released'
      },
    }))
    return { charged: -rows.reduce((sum, r) => sum + r.amount, 0), balance: this.balance(hold.payer) }
  }

  /** The answer receipt of a hold whose debit is in `unit` (it lands with the debit and the answer, or not at all). */
  answeredIn(hold: Hold, unit: UnitOfWork): void {
    if (hold.state !== 'settling') return
    const row: DrawRow = {
      id: newDrawId(), payer: hold.payer, kind: 'answer', amount: 0, reason: hold.key, ref: hold.payment_id, lot_id: '',
      created_at: iso(this.clock.now()), expires_at: null,
    }
    unit.add(this.journal, [row], this.inUnit({ applied: () => this.apply(row) }))
  }

  /**
   * Spec (States, Scout allowance): first call → "balance credited with 3000 credits (3 questions of 1,000)"; again →
   * "existing allowance returned; never recharges". Concurrent first calls write one grant.
   */
  async grantScout(payer: string): Promise<{ granted: boolean }> {
    const s = this.state(payer)
    if (s.scoutLot) return { granted: false }
    const key = CreditLedger.payerKey(payer)
    const inFlight = this.scouting.get(key)
    if (inFlight) {
      await inFlight
      return { granted: false }
    }
    const write = this.write([this.creditRow(payer, SCOUT_CREDITS, 'scout', `scout:${key}`, null)])
    this.scouting.set(key, write)
    try {
      await write
    } finally {
      this.scouting.delete(key)
    }
    return { granted: true }
  }

  scoutStatus(payer: string): { granted: boolean; questions_left: number; credits_left: number } {
    const s = this.state(payer)
    const lot = s.scoutLot ? s.lots.get(s.scoutLot) : undefined
    const left = lot ? this.available(lot, this.clock.now()) : 0
    return { granted: !!lot, questions_left: Math.floor(left / SCOUT_CREDITS_PER_QUESTION), credits_left: left }
  }

  private creditRow(payer: string, credits: number, reason: string, ref: string, expiresAt: number | null): DrawRow {
    return {
      id: newDrawId(), payer: CreditLedger.payerKey(payer), kind: 'credit', amount: credits, reason, ref,
      lot_id: `lot_${randomUUID()}`, created_at: iso(this.clock.now()), expires_at: expiresAt === null ? null : iso(expiresAt),
    }
  }

  /**
   * Adds a lot. Idempotent by (reason, ref): a second credit with the same reason and ref returns the first row
   * (replayed true) and never credits twice.
   */
  async credit(payer: string, credits: number, opts: CreditOptions): Promise<{ row: DrawRow; replayed: boolean }> {
    const unit = new UnitOfWork()
    const out = this.creditIn(unit, payer, credits, opts)
    if (!out.replayed) await unit.commit()
    return out
  }

  /**
   * A lot bought by a paid call, inside its unit of work: it becomes spendable once the unit is durable and never
   * exists when the unit is dropped (a failed settlement). Idempotent by (reason, ref) like credit(): the idempotency
   * slot is taken now, so a concurrent duplicate sees it, and freed if the unit never lands.
   */
  creditIn(unit: UnitOfWork, payer: string, credits: number, opts: CreditOptions): { row: DrawRow; replayed: boolean } {
    if (!Number.isSafeInteger(credits) || credits <= 0) throw new Error('credit: credits must be a positive integer')
    const s = this.state(payer)
    const slot = `${opts.reason}|${opts.ref}`
    const existing = s.credits.get(slot)
    if (existing) return { row: existing, replayed: true }
    const now = this.clock.now()
    const row = this.creditRow(payer, credits, opts.reason, opts.ref, opts.lifetimeDays === null ? null : now + opts.lifetimeDays * DAY_MS)
    s.credits.set(slot, row)
    unit.add(this.journal, [row], this.inUnit({
      applied: () => this.apply(row),
      aborted: () => {
        if (s.credits.get(slot) === row) s.credits.delete(slot)
      },
    }))
    return { row, replayed: false }
  }

  /**
   * Spec (States, Credit debit): debited → reversed on "operator reverse action ... ref names the debit"; "reversed_at
   * stamped; idempotent; never a second credit". Returns the refund rows (the existing ones when already reversed);
   * throws DEBIT_NOT_FOUND for an unknown ref or a ref of another payer.
   */
  async reverse(payer: string, ref: string, cause: string): Promise<{ refunds: DrawRow[]; replayed: boolean }> {
    const d = this.debits.get(ref)
    if (!d || d.payer !== CreditLedger.payerKey(payer) || d.rows.length === 0) {
      throw new ServiceError('DEBIT_NOT_FOUND', { detail: { field: '/body/ref', value: ref } })
    }
    if (d.refunds.length > 0) return { refunds: d.refunds, replayed: true }
    const inFlight = this.reversing.get(ref)
    if (inFlight) return { refunds: await inFlight, replayed: true }
    const created = iso(this.clock.now())
    const rows: DrawRow[] = d.rows.map((r) => ({
      id: newDrawId(), payer: r.payer, kind: 'refund', amount: -r.amount, reason: `reversal.${cause}`, ref, lot_id: r.lot_id,
      created_at: created, expires_at: null,
    }))
    const write = this.write(rows).then(() => rows)
    this.reversing.set(ref, write)
    try {
      return { refunds: await write, replayed: false }
    } finally {
      this.reversing.delete(ref)
    }
  }

  /** The debit a ref names as this replica knows it: its payer and whether it was reversed (null: not read yet, or none). */
  debitOf(ref: string): { payer: string; reversed: boolean } | null {
    const d = this.debits.get(ref)
    return d && d.rows.length > 0 ? { payer: d.payer, reversed: d.refunds.length > 0 } : null
  }

  lots(payer: string, at = this.clock.now()): LotView[] {
    const s = this.state(payer)
    return [...s.lots.values()]
      .sort((a, b) => (a.expires_at ?? Infinity) - (b.expires_at ?? Infinity) || a.created_at - b.created_at)
      .map((l) => ({
        lot_id: l.lot_id, source: l.source, granted: l.granted, remaining: l.remaining - l.reserved, created_at: iso(l.created_at),
        expires_at: l.expires_at === null ? null : iso(l.expires_at), expired: !this.spendable(l, at),
        usable_on: l.lot_id === s.scoutLot ? 'entry' : 'any',
      }))
  }

  /**
   * A payer's rows newest first, reversed_at derived from the refund rows (never stored); with `cursor` (a previous
   * page's next_cursor), the rows after the one it names. The cursor is that row's place in the payer's journal order
   * (its key keeps one payer's rows in order; rows are only appended) and its id: new rows only extend the order, so a
   * walk lists each row present when it began exactly once. A place that no longer holds the id (the order rebuilt
   * after a restart, where acknowledgement and journal order may differ) is found again by the id; an id this payer
   * does not have (another payer's cursor) is refused as INVALID_CURSOR.
   */
  draws(payer: string, limit: number, cursor: string | null = null): { count: number; draws: DrawView[]; next_cursor: string | null } {
    const rows = this.state(payer).rows.filter((r) => r.kind !== 'answer')
    let end = rows.length
    if (cursor !== null) {
      const [at, id] = decodePosition(DRAWS_CURSOR, cursor, ['number', 'string'] as const)
      end = rows[at]?.id === id ? at : rows.findIndex((r) => r.id === id)
      if (end < 0) throw new ServiceError('VALIDATION', { message: `${CURSOR_FIELD}: not a cursor of this payer's draws`, detail: { reason: 'INVALID_CURSOR', field: CURSOR_FIELD } })
    }
    const out: DrawView[] = []
    for (let i = end - 1; i >= 0 && out.length < limit; i--) {
      const r = rows[i]!
      const refund = r.kind === 'debit' ? this.debits.get(r.ref)?.refunds.find((f) => f.lot_id === r.lot_id) : undefined
      out.push({ ...r, reversed_at: refund ? refund.created_at : null })
    }
    const last = end - out.length
    return { count: rows.length, draws: out, next_cursor: last > 0 && out.length > 0 ? encodeCursor(DRAWS_CURSOR, [last, rows[last]!.id]) : null }
  }

  /** Every payer's rows (for the surge meter); journal order per payer. */
  *allRows(): Iterable<DrawRow> {
    for (const s of this.payers.values()) yield* s.rows
  }

  /** Lot of a row (source and expiry), when known. */
  lotOf(payer: string, lotId: string): Lot | undefined {
    return this.state(payer).lots.get(lotId)
  }
}
