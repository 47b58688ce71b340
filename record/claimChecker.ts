/**
 * The open claim checker (spec, Intelligence measures: "POST /v1/verify takes a receipt { poj_id, body }, recomputes
 * the id with a canonical JSON (JCS) SHA-256 scheme and returns valid (boolean) with the recomputed id beside the
 * claimed one. valid: true means internally consistent only.").
 *
 * A receipt is a decision: poj_id is its decision_id and body is the decision record exactly as GET
 * /v1/decisions/{decision_id} (or POST /v1/decisions) returned it in data. The id is a name-based UUID of the body's
 * identity fields (engine/identity.ts: the first 16 bytes of SHA-256 over the JCS of ["svc.decision.v1", question_id,
 * asset, subject, input_hash, policy_version], version 8, variant 10), so anyone holding a receipt can recompute it
 * without the service; the other fields of the body are not covered by the id (the lineage route verifies the inputs
 * behind input_hash).
 */
import { isWellFormed } from '../common/jcs.ts'
import { ServiceError } from '../common/ServiceError.ts'
import { decisionIdOf, DECISION_ID_DOMAIN } from '../engine/identity.ts'
import type { VerifyResult } from './schemas.ts'

export const RECEIPT_SCHEME = `${DECISION_ID_DOMAIN}: uuid v8 of SHA-256(JCS(["${DECISION_ID_DOMAIN}", question_id, asset, subject, input_hash, policy_version]))`

export interface Receipt {
  poj_id: string
  body: { question_id: string; asset: string; subject: string | null; input_hash: string | null; policy_version: string } & Record<string, unknown>
}

export function verifyReceipt(r: Receipt): VerifyResult {
  const b = r.body
  // JCS (RFC 8785 §3.2.2.2) has no canonical form for a lone surrogate, so such a body has no id to recompute.
  for (const field of ['question_id', 'asset', 'subject', 'policy_version'] as const) {
    const v = b[field]
    if (typeof v === 'string' && !isWellFormed(v)) {
      throw new ServiceError('VALIDATION', { message: `body.${field} is not well-formed Unicode (a lone surrogate): no canonical JSON exists for it`, detail: { reason: 'REQUEST_VALIDATION_FAILED', field: `/body/body/${field}` } })
    }
  }
  if (b.input_hash === null) {
    return {
      valid: false,
      claimed_id: r.poj_id,
      recomputed_id: null,
      scheme: RECEIPT_SCHEME,
      note: 'The body has no input_hash, so its id cannot be recomputed; a recorded decision always has one.',
    }
  }
  const recomputed = decisionIdOf({ question_id: b.question_id, asset: b.asset, subject: b.subject, input_hash: b.input_hash, policy_version: b.policy_version })
  const valid = recomputed === r.poj_id.toLowerCase()
  return {
    valid,
    claimed_id: r.poj_id,
    recomputed_id: recomputed,
    scheme: RECEIPT_SCHEME,
    note: valid
      ? 'The id follows from the body\'s identity fields: the receipt is internally consistent. That alone does not show the service recorded it; GET /v1/decisions/{id} and /v1/lineage/{id} do.'
      : 'The id does not follow from the body\'s identity fields: the receipt was altered or belongs to another decision.',
  }
}
