/**
 * The duel (spec, What the service does 6): a player locks a personal call on an open clock; at resolution one
 * evaluator grades the house's frozen probability and the call. Not built yet on this deployment: the route answers
 * 503 SERVICE_UNWIRED naming 'duel' until a Duel is wired.
 */
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'

export interface Duel {
  /** CLOCK_CLOSED / CALL_ALREADY_LOCKED as ServiceErrors; unknown decision → null. */
  lockCall(input: { payer: string; decision_id: string; call: 'obtains' | 'not'; call_probability: number | null }, payment: PaidCall): Promise<unknown | null>
}
