/**
 * One durable unit of work across journals: records staged in several journals are appended as ONE atomic unit of
 * the event log (LogProducer.sendAtomic: one fsync round on the embedded log, one Kafka transaction read by
 * read_committed consumers), so a crash leaves all of them or none.
 *
 * Issue 11, item 7: "A paid call is one durable unit of work: its debit, its decision and its answer receipt are
 * appended atomically". The dispatcher opens a unit per paid call; the handler adds what its answer writes (the
 * decision), the credits rail adds the debit and the answer receipt, and the dispatcher commits the unit once, after
 * the payment is captured and before the answer is written.
 *
 * Each add() may bring an `applied` effect (an in-memory index learning the record) that runs only once the unit is
 * durable, and an `aborted` one (drop a reservation) that runs if it never becomes durable. Records are validated and
 * encoded when added, so a bad record fails the handler, never the commit.
 */
import type { Static, TObject } from '../../common/schema.ts'
import type { LogRecord, TopicRecords } from '../log/EventLog.ts'
import type { Journal } from './Journal.ts'

export class UnitOfWork {
  private readonly batches = new Map<Journal<TObject>, LogRecord[]>()
  private readonly onCommit: Array<() => void> = []
  /** Given the append's error when a commit failed (its records may then be in the log after all); none when dropped. */
  private readonly onAbort: Array<(err?: unknown) => void> = []
  private state: 'open' | 'committing' | 'committed' | 'aborted' = 'open'

  /** Stages records of one journal (validated and encoded now) and what to do once they are durable. */
  add<S extends TObject>(journal: Journal<S>, records: readonly Static<S>[], effects: { applied?: () => void; aborted?: (err?: unknown) => void } = {}): void {
    if (this.state !== 'open') throw new Error(`the unit of work is already ${this.state}`)
    const encoded = records.map((r) => journal.toLogRecord(r))
    const list = this.batches.get(journal as unknown as Journal<TObject>)
    if (list) list.push(...encoded)
    else this.batches.set(journal as unknown as Journal<TObject>, encoded)
    if (effects.applied) this.onCommit.push(effects.applied)
    if (effects.aborted) this.onAbort.push(effects.aborted)
  }

  /**
   * An in-memory effect to run once the unit is durable, for a reader of something the unit wrote that keeps no
   * journal of its own (test doubles of a paid route). Nothing durable may be written here: that goes through add().
   */
  onCommitted(applied: () => void): void {
    if (this.state !== 'open') throw new Error(`the unit of work is already ${this.state}`)
    this.onCommit.push(applied)
  }

  /**
   * Appends every staged record as one atomic unit, then runs the committed effects. A failed append runs the aborted
   * effects and rethrows: nothing of the unit is in the log (or, for a Kafka commit whose answer was lost, its outcome
   * is unknown, as for any send).
   */
  async commit(): Promise<void> {
    if (this.state !== 'open') throw new Error(`the unit of work is already ${this.state}`)
    this.state = 'committing'
    if (this.batches.size > 0) {
      const journals = [...this.batches.keys()]
      const log = journals[0]!.log
      if (journals.some((j) => j.log !== log)) {
        this.abandon()
        throw new Error('a unit of work spans journals on different event logs; it can only be atomic on one')
      }
      const batches: TopicRecords[] = journals.map((j) => ({ topic: j.topic, records: this.batches.get(j)! }))
      try {
        await journals[0]!.sendAtomic(batches, journals)
      } catch (err) {
        this.abandon(err)
        throw err
      }
    }
    this.state = 'committed'
    for (const fn of this.onCommit) fn()
  }

  /** Drops everything staged and runs the aborted effects. Idempotent; a committed unit is not touched. */
  abort(): void {
    if (this.state === 'open') this.abandon()
  }

  private abandon(err?: unknown): void {
    this.state = 'aborted'
    this.batches.clear()
    for (const fn of this.onAbort) fn(err)
  }
}
