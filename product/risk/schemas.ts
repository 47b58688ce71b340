/** The risk domain's public shapes (spec, Risk assessment (S11)), each one TypeBox schema with its type inferred from it. */
import { Address, Instant, JsonObject, Probability, StringEnum, Type } from '../../common/schema.ts'
import { RISK_SUBJECT_KINDS } from '../../models/account/accountSnapshot.ts'

/**
 * Spec: "Response data: { subject: { kind, address }, risk: 'allow' | 'review' | 'block', allow_probability,
 * review_probability, block_probability, confidence, decision, action, input_hash, policy_version, timestamp, full }".
 */
export const RISK_ASSESSMENT = Type.Object({
  subject: Type.Object({ kind: StringEnum(RISK_SUBJECT_KINDS), address: Address }, { additionalProperties: false }),
  risk: StringEnum(['allow', 'review', 'block']),
  allow_probability: Probability,
  review_probability: Probability,
  block_probability: Probability,
  confidence: Probability,
  decision: Type.String(),
  action: Type.String(),
  input_hash: Type.String(),
  policy_version: Type.String(),
  timestamp: Instant,
  full: JsonObject,
})
