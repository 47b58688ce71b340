/** What the risk routes call (spec: "All four subject kinds ... bill risk.assess and share one pipeline; the kind is a label"). */
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { RiskSubjectKind } from '../../models/account/accountSnapshot.ts'

export interface RiskEngine {
  assess(kind: RiskSubjectKind, body: Record<string, unknown>, payment: PaidCall): Promise<unknown>
}
