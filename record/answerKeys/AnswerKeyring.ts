/**
 * The deployment's answer keys: every key ever used, published with its validity window, and the one in force, which
 * signs the decision records the service serves (record/answerKeys/answerSignature.ts says what is signed).
 */
import type { Hex, LocalAccount } from 'viem'
import type { SigningWorker } from './SigningWorker.ts'
import { ANSWER_SIGNATURE_SCHEME, signedTextOf, type AnswerSignature, type PublishedAnswerKey } from './answerSignature.ts'

/** A decision record as signed: the object served in data (its decision_id names the signature). */
export interface SignableRecord {
  readonly decision_id: string
}

export class AnswerKeyring {
  /**
   * Records are immutable and the ledger hands out the same frozen object per row, so a record served many times is
   * signed once per key; a WeakMap lets the signature go with the record.
   */
  private readonly signed = new WeakMap<object, AnswerSignature | Promise<AnswerSignature>>()

  constructor(
    /** Oldest first; the last one is in force (valid_until null). */
    readonly keys: readonly PublishedAnswerKey[],
    private readonly account: LocalAccount,
    private readonly now: () => number,
    /** Where signatures are made: on a worker thread when given (the service), else on this one (tests, tools). */
    private readonly worker: SigningWorker | null = null,
  ) {
    const active = keys.at(-1)
    if (!active || active.valid_until !== null || active.address.toLowerCase() !== account.address.toLowerCase()) {
      throw new Error('the answer key in force must be the last published key, with an open window')
    }
  }

  get signer(): `0x${string}` {
    return this.account.address
  }

  /** The signature of one record: cached per record object (a promise only the first time). */
  sign(record: SignableRecord): AnswerSignature | Promise<AnswerSignature> {
    const known = this.signed.get(record)
    if (known !== undefined) return known
    const signedAt = new Date(this.now()).toISOString()
    const text = signedTextOf(record, signedAt)
    const signing: Promise<Hex> = this.worker ? this.worker.signMessage(text) : this.account.signMessage({ message: text })
    const pending = signing.then((signature) => {
      const sig: AnswerSignature = Object.freeze({ decision_id: record.decision_id, scheme: ANSWER_SIGNATURE_SCHEME, signer: this.account.address, signature, signed_at: signedAt })
      if (Object.isFrozen(record)) this.signed.set(record, sig)
      else this.signed.delete(record)
      return sig
    })
    // Concurrent first serves of one record share one signing; a mutable record is never cached past it.
    this.signed.set(record, pending)
    pending.catch(() => this.signed.delete(record))
    return pending
  }

  /** Stops the signing worker, if any (answers signed after this are refused, never unsigned). */
  async close(): Promise<void> {
    await this.worker?.close()
  }
}
