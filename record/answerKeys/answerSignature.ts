/**
 * What an answer signature covers and how anyone checks it (issue 29, Deliver 2: "the service signs every decision
 * record it serves ... its address published in the discovery documents with validity windows").
 *
 * The signed text is the JCS (RFC 8785, common/jcs.ts) of { record, signed_at }: `record` is the decision record
 * exactly as served in `data` (not the envelope), `signed_at` the instant the deployment key signed it. It is signed
 * with EIP-191 personal_sign, not EIP-712: a record's `conditions` is open JSON that no fixed EIP-712 type describes,
 * while JCS gives every JSON value one text. signed_at is inside the signed text so the window check below cannot be
 * moved by whoever holds the receipt.
 *
 * A signature counts when its recovered signer is a published key whose window [valid_from, valid_until) holds
 * signed_at: keys rotate by closing a window, a retired key keeps vouching for what it signed inside its window, and
 * nothing it signs after proves anything. Windows and signed_at are wall time (when the operator rotated), not the
 * service's data clock: a replayed tape's virtual time restarts with the service and would fall outside them.
 */
// viem/utils, not the viem index: the index loads every client, action and chain (~0.5 s of svc start-up, bench/startup.ts).
import { recoverMessageAddress } from 'viem/utils'
import type { Hex } from 'viem'
import { canonicalJson } from '../../common/jcs.ts'
import type { AnswerSignature, PublishedAnswerKey } from '../schemas.ts'
import type { AnswerKeyring } from './AnswerKeyring.ts'

export const ANSWER_SIGNATURE_SCHEME = 'eip191-jcs-v1'
export const ANSWER_SIGNATURE_TEXT = 'EIP-191 personal_sign over JCS({ record, signed_at }), record = the decision record as served in data'

export type { AnswerSignature, PublishedAnswerKey }

/** The exact text that is signed (and that an offline check recovers the signer from). */
export function signedTextOf(record: unknown, signedAt: string): string {
  return canonicalJson({ record, signed_at: signedAt })
}

export function windowHolds(key: PublishedAnswerKey, at: string): boolean {
  const t = Date.parse(at)
  return Date.parse(key.valid_from) <= t && (key.valid_until === null || t < Date.parse(key.valid_until))
}

export interface SignatureCheck {
  /** The address the signature recovers to over JCS({ record: body, signed_at }); null when it recovers to none. */
  recovered_signer: Hex | null
  /** The published key of that address whose window holds signed_at, else null. */
  key: PublishedAnswerKey | null
  ok: boolean
  reason: 'ok' | 'unrecoverable' | 'unknown_signer' | 'outside_window' | 'signer_mismatch'
}

export async function checkAnswerSignature(body: Record<string, unknown>, sig: Pick<AnswerSignature, 'signer' | 'signature' | 'signed_at'>, keys: readonly PublishedAnswerKey[]): Promise<SignatureCheck> {
  let recovered: Hex | null
  try {
    recovered = await recoverMessageAddress({ message: signedTextOf(body, sig.signed_at), signature: sig.signature as Hex })
  } catch {
    recovered = null
  }
  if (recovered === null) return { recovered_signer: null, key: null, ok: false, reason: 'unrecoverable' }
  const same = (k: PublishedAnswerKey) => k.address.toLowerCase() === recovered!.toLowerCase()
  const key = keys.find((k) => same(k) && windowHolds(k, sig.signed_at)) ?? null
  if (recovered.toLowerCase() !== sig.signer.toLowerCase()) return { recovered_signer: recovered, key, ok: false, reason: 'signer_mismatch' }
  if (!keys.some(same)) return { recovered_signer: recovered, key: null, ok: false, reason: 'unknown_signer' }
  if (key === null) return { recovered_signer: recovered, key: null, ok: false, reason: 'outside_window' }
  return { recovered_signer: recovered, key, ok: true, reason: 'ok' }
}

/**
 * The published keys and what they sign: the one source of GET /v1/answer-keys and the discovery documents (a
 * deployment without a keyring publishes none, and none of its receipts verify).
 */
export interface AnswerKeys {
  scheme: typeof ANSWER_SIGNATURE_SCHEME
  signed_text: string
  keys: PublishedAnswerKey[]
}

export function answerKeysOf(keyring: Pick<AnswerKeyring, 'keys'> | undefined): AnswerKeys {
  return { scheme: ANSWER_SIGNATURE_SCHEME, signed_text: ANSWER_SIGNATURE_TEXT, keys: [...(keyring?.keys ?? [])] }
}
