/**
 * The answer keys of a cluster (issue 32): every instance signs with the key of its own data folder, so a receipt
 * signed by one must verify at all of them. At start each instance publishes its keyring's windows on the `answer.keys`
 * journal (pipeline/records/answerKeyRecord.ts) and follows that journal for as long as it runs; the published list
 * (GET /v1/answer-keys, POST /v1/verify) is then every instance's windows, the same everywhere within the follower's
 * fetch wait. A window is its address and valid_from; a record of it with valid_until set retires it (a rotation made
 * while the instance was down is published at its next start), and a retirement is never undone.
 */
import type { Logger } from 'pino'
import { Journal, type JournalFollower } from '../../pipeline/journal/Journal.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { ANSWER_KEYS, type AnswerKeyRow } from '../../pipeline/records/answerKeyRecord.ts'
import type { PublishedAnswerKey } from './answerSignature.ts'

const windowOf = (k: Pick<PublishedAnswerKey, 'address' | 'valid_from'>) => `${k.address.toLowerCase()}@${k.valid_from}`

export class ClusterAnswerKeys {
  private readonly windows = new Map<string, PublishedAnswerKey>()
  private sorted: readonly PublishedAnswerKey[] = []
  private follower: JournalFollower | null = null
  private closed = false

  private constructor(private readonly journal: Journal<typeof ANSWER_KEYS.schema>) {}

  /** Reads every instance's published windows, then publishes those of `own` the journal does not hold as they are. */
  static async open(o: { log: EventLog; instance: string; own: readonly PublishedAnswerKey[]; now: () => number; partitions?: number; logger: Logger; group?: string }): Promise<ClusterAnswerKeys> {
    const journal = await Journal.open({ log: o.log, def: ANSWER_KEYS, ...(o.partitions !== undefined ? { partitions: o.partitions } : {}) })
    const keys = new ClusterAnswerKeys(journal)
    try {
      keys.follower = await journal.follow(o.group ?? 'svc.answer-keys', (r) => keys.apply(r), {
        onInvalid: (err, r) => o.logger.warn({ offset: r.offset, partition: r.partition, err: err.message }, 'undecodable answer key record ignored'),
      })
      const createdAt = new Date(o.now()).toISOString()
      const missing = o.own.filter((k) => {
        const have = keys.windows.get(windowOf(k))
        return have === undefined || (have.valid_until === null && k.valid_until !== null)
      })
      const rows: AnswerKeyRow[] = missing.map((k) => ({
        id: `${windowOf(k)}@${k.valid_until ?? 'open'}`, instance: o.instance, address: k.address, valid_from: k.valid_from, valid_until: k.valid_until, created_at: createdAt,
      }))
      if (rows.length > 0) {
        await journal.append(rows)
        for (const r of rows) keys.apply(r)
        o.logger.info({ published: rows.map((r) => r.address) }, 'published this instance\'s answer keys to the cluster')
      }
    } catch (err) {
      await keys.close()
      throw err
    }
    return keys
  }

  /** Every instance's windows, oldest first (then by address): the same list on every instance. */
  get keys(): readonly PublishedAnswerKey[] {
    return this.sorted
  }

  private apply(r: AnswerKeyRow): void {
    const id = windowOf(r)
    const have = this.windows.get(id)
    if (have && (have.valid_until !== null || r.valid_until === null)) return
    this.windows.set(id, Object.freeze({ address: r.address, valid_from: r.valid_from, valid_until: r.valid_until }))
    this.sorted = Object.freeze([...this.windows.values()].sort((a, b) => a.valid_from.localeCompare(b.valid_from) || a.address.localeCompare(b.address)))
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.follower?.stop()
    this.follower = null
    await this.journal.close()
  }
}
