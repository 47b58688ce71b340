/**
 * Delivery (spec, What the service does 8): per-decision resolution hooks, outcome hook endpoints, push, follows and
 * alert watches. Not built yet on this deployment: POST /v1/hooks answers 503 SERVICE_UNWIRED naming 'delivery' until
 * a Delivery is wired.
 */
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'

export interface Delivery {
  /** Terminal clock → HOOK_CLOCK_TERMINAL; unsafe url → UNSAFE_URL; unknown decision → null. */
  armHook(input: { decision_id: string; url: string }, payment: PaidCall): Promise<unknown | null>
}
