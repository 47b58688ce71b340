/**
 * The open claim checker (spec, Intelligence measures: "POST /v1/verify takes a receipt { poj_id, body }, recomputes
 * the id with a canonical JSON (JCS) SHA-256 scheme and returns valid (boolean) with the recomputed id beside the
 * claimed one. valid: true means internally consistent only.").
 *
 * A receipt is a decision: poj_id is its decision_id, body is the decision record exactly as the service served it in
 * data, and (issue 29) signature is the meta.signatures entry served beside it. The id is a name-based UUID of the
 * body's identity fields only (engine/identity.ts: the first 16 bytes of SHA-256 over the JCS of ["svc.decision.v1",
 * question_id, asset, subject, input_hash, policy_version], version 8, variant 10), so an id alone cannot show what
 * the service said: a body with another probability has the same id. The signature covers the whole body
 * (record/answerKeys/answerSignature.ts), and where the ledger holds the id its record is compared field by field.
 * valid needs all of it: the id follows from the body, the signature recovers to a published key inside its window,
 * and the ledger (when this deployment has one) holds exactly this body.
 */
import { canonicalJson, isWellFormed } from '../common/jcs.ts'
import { ServiceError } from '../common/ServiceError.ts'
import { decisionIdOf, DECISION_ID_DOMAIN } from '../engine/identity.ts'
import { checkAnswerSignature } from './answerKeys/answerSignature.ts'
import type { AnswerSignature, PublishedAnswerKey, VerifyResult } from './schemas.ts'

export const RECEIPT_SCHEME = `${DECISION_ID_DOMAIN}: uuid v8 of SHA-256(JCS(["${DECISION_ID_DOMAIN}", question_id, asset, subject, input_hash, policy_version])); signature eip191-jcs-v1 over JCS({ record: body, signed_at })`

export interface Receipt {
  poj_id: string
  body: { question_id: string; asset: string; subject: string | null; input_hash: string | null; policy_version: string } & Record<string, unknown>
  signature?: Pick<AnswerSignature, 'signer' | 'signature' | 'signed_at'> & Partial<AnswerSignature>
}

export interface ReceiptEvidence {
  /** Every published answer key with its window. */
  keys: readonly PublishedAnswerKey[]
  /** The ledger's record under poj_id: null when it holds none, undefined when this deployment has no ledger. */
  recorded: Record<string, unknown> | null | undefined
}

type Ledger = VerifyResult['ledger']

export async function verifyReceipt(r: Receipt, evidence: ReceiptEvidence): Promise<VerifyResult> {
  const b = r.body
  // JCS (RFC 8785 §3.2.2.2) has no canonical form for a lone surrogate, so such a body has no id or signed text.
  for (const field of ['question_id', 'asset', 'subject', 'policy_version'] as const) {
    const v = b[field]
    if (typeof v === 'string' && !isWellFormed(v)) throw notCanonical(`body.${field}`, `/body/body/${field}`)
  }
  try {
    canonicalJson(b)
  } catch {
    throw notCanonical('body', '/body/body')
  }
  const recomputed = b.input_hash === null ? null : decisionIdOf({ question_id: b.question_id, asset: b.asset, subject: b.subject, input_hash: b.input_hash, policy_version: b.policy_version })
  const idOk = recomputed !== null && recomputed === r.poj_id.toLowerCase()
  const sig = r.signature
  const checked = sig ? await checkAnswerSignature(b, sig, evidence.keys) : null
  const signature = sig && checked
    ? { ok: checked.ok, reason: checked.reason, claimed_signer: sig.signer, recovered_signer: checked.recovered_signer, signed_at: sig.signed_at, key: checked.key }
    : null
  const ledger = ledgerCheck(b, evidence.recorded)
  const valid = idOk && signature?.ok === true && (ledger.status === 'match' || ledger.status === 'unavailable')
  return { valid, claimed_id: r.poj_id, recomputed_id: recomputed, scheme: RECEIPT_SCHEME, note: noteOf(valid, recomputed, idOk, signature, ledger), id_ok: idOk, signature, ledger }
}

function notCanonical(what: string, field: string): ServiceError {
  return new ServiceError('VALIDATION', { message: `${what} is not well-formed Unicode (a lone surrogate): no canonical JSON exists for it`, detail: { reason: 'REQUEST_VALIDATION_FAILED', field } })
}

function ledgerCheck(body: Record<string, unknown>, recorded: Record<string, unknown> | null | undefined): Ledger {
  if (recorded === undefined) return { status: 'unavailable', differences: [] }
  if (recorded === null) return { status: 'not_found', differences: [] }
  const differences: Ledger['differences'] = []
  diff(body, recorded, '', differences)
  return { status: differences.length === 0 ? 'match' : 'differs', differences }
}

/** Where two JSON values differ, as JSON Pointers into the body (a missing member reads as null in the output). */
function diff(claimed: unknown, recorded: unknown, path: string, out: Ledger['differences']): void {
  const bothObjects = isObject(claimed) && isObject(recorded)
  const bothArrays = Array.isArray(claimed) && Array.isArray(recorded) && claimed.length === recorded.length
  if (bothObjects) {
    const c = claimed as Record<string, unknown>
    const r = recorded as Record<string, unknown>
    for (const k of [...new Set([...Object.keys(c), ...Object.keys(r)])].sort()) diff(c[k], r[k], `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, out)
  } else if (bothArrays) {
    claimed.forEach((v, i) => diff(v, (recorded as unknown[])[i], `${path}/${i}`, out))
  } else if (canonicalJson(claimed ?? null) !== canonicalJson(recorded ?? null) || (claimed === undefined) !== (recorded === undefined)) {
    out.push({ path, claimed: claimed ?? null, recorded: recorded ?? null })
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function noteOf(valid: boolean, recomputed: string | null, idOk: boolean, signature: VerifyResult['signature'], ledger: Ledger): string {
  if (valid) {
    return ledger.status === 'match'
      ? 'The id follows from the body, the signature recovers to a published answer key inside its window, and the ledger holds exactly this record: the service said this.'
      : 'The id follows from the body and the signature recovers to a published answer key inside its window: the service said this (no ledger on this deployment to compare with).'
  }
  const why: string[] = []
  if (recomputed === null) why.push('the body has no input_hash, so its id cannot be recomputed (a recorded decision always has one)')
  else if (!idOk) why.push('the id does not follow from the body\'s identity fields')
  if (signature === null) why.push('the receipt carries no signature, so nothing shows the service said this body')
  else if (!signature.ok) why.push(`the signature does not hold (${signature.reason}): the body is not what the key signed, or the key did not vouch for it then`)
  if (ledger.status === 'not_found') why.push('the ledger holds no decision under this id')
  if (ledger.status === 'differs') why.push(`the ledger's record differs at ${ledger.differences.map((d) => d.path).join(', ')}`)
  return `Not valid: ${why.join('; ')}.`
}
