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

  /** Several instances (issue 32): every instance's published windows, this one's among them (ClusterAnswerKeys). */
  private cluster: { readonly keys: readonly PublishedAnswerKey[] } | null = null

  constructor(
    /** This data folder's keys, oldest first; the last one is in force (valid_until null). */
    readonly ownKeys: readonly PublishedAnswerKey[],
    private readonly account: LocalAccount,
    private readonly now: () => number,
    /** Where signatures are made: on a worker thread when given (the service), else on this one (tests, tools). */
    private readonly worker: SigningWorker | null = null,
  ) {
    const active = ownKeys.at(-1)
    if (!active || active.valid_until !== null || active.address.toLowerCase() !== account.address.toLowerCase()) {
      throw new Error('the answer key in force must be the last published key, with an open window')
    }
  }

  /** The published keys: this folder's, or with SVC_CLUSTER=on every instance's (a receipt verifies at any of them). */
  get keys(): readonly PublishedAnswerKey[] {
    return this.cluster?.keys ?? this.ownKeys
  }

  /** Publishes every instance's keys from here on (the cluster's list holds this folder's too). */
  useCluster(cluster: { readonly keys: readonly PublishedAnswerKey[] }): void {
    this.cluster = cluster
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
