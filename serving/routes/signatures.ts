/**
 * Signed answers (issue 29, Deliver 2): every decision record a route serves is signed by the deployment's answer key
 * in force, and the signatures travel in meta.signatures, one per record (matched by decision_id), so data stays the
 * record exactly as the ledger holds it and `{ poj_id, body: <the record>, signature: <its entry> }` is a receipt
 * POST /v1/verify and an offline check accept. Routes name where their records are; this helper signs them.
 */
import { decisionAnswer, type DecisionAnswer } from '../../engine/EngineServices.ts'
import type { DecisionRead } from '../../engine/schemas.ts'
import type { SignableRecord } from '../../record/answerKeys/AnswerKeyring.ts'
import type { AnswerSignature } from '../../record/schemas.ts'
import type { MetaOverrides } from '../envelope.ts'
import type { HandlerContext } from './types.ts'

type Answer = { data: unknown; meta?: MetaOverrides }

/** A frozen answer (a ledger row's, re-served many times) is signed once: the signed answer is kept beside it. */
const signedAnswers = new WeakMap<object, Answer>()

export function signRecords<R extends Answer>(ctx: HandlerContext, answer: R, records: readonly SignableRecord[]): R | Promise<R> {
  const keys = ctx.services.answerKeys
  if (!keys || records.length === 0) return answer
  const known = signedAnswers.get(answer)
  if (known !== undefined) return known as R
  const sigs = records.map((r) => keys.sign(r))
  if (sigs.every((s): s is AnswerSignature => !(s instanceof Promise))) return withSignatures(answer, sigs)
  return Promise.all(sigs).then((all) => withSignatures(answer, all))
}

function withSignatures<R extends Answer>(answer: R, signatures: AnswerSignature[]): R {
  const signed = { ...answer, meta: { ...answer.meta, signatures } }
  if (Object.isFrozen(answer)) {
    // Deeply frozen meta lets the envelope cache its bytes (serving/envelope.ts cachedMetaRest).
    Object.freeze(signatures)
    Object.freeze(signed.meta)
    signedAnswers.set(answer, Object.freeze(signed))
  }
  return signed
}

/** A decision route's answer (engine/EngineServices.ts decisionAnswer) with its record signed. */
export function signedDecision(ctx: HandlerContext, read: DecisionRead): DecisionAnswer | Promise<DecisionAnswer> {
  const answer = decisionAnswer(read)
  return signRecords(ctx, answer, [answer.data])
}
