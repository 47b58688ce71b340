/**
 * Risk routes (spec, Risk assessment (S11)): "All four subject kinds (transaction, token, wallet, protocol) bill
 * risk.assess and share one pipeline; the kind is a label." Transport only.
 */
import { Address, CanonicalAsset, Strict, Type } from '../../common/schema.ts'
import { RISK_CANDIDATE, type RiskSubjectKind } from '../../models/account/accountSnapshot.ts'
import { RISK_ASSESSMENT } from '../../product/risk/schemas.ts'
import { env, paid } from './define.ts'
import type { McpTool, RouteDef } from './types.ts'

const BASE = { asset: CanonicalAsset, address: Address, candidate: RISK_CANDIDATE }

const riskRoute = (kind: RiskSubjectKind, body: ReturnType<typeof Strict>, mcp?: McpTool): RouteDef => ({
  id: `risk.${kind}`,
  method: 'POST',
  path: `/v1/risk/${kind}`,
  summary: `S11 risk assessment of a ${kind} subject`,
  tags: ['risk'],
  pay: paid('risk.assess'),
  ...(mcp ? { mcp } : {}),
  needs: ['risk'],
  request: { body },
  response: env(RISK_ASSESSMENT),
  errors: ['PROVIDER_DOWN'],
  handler: async (ctx) => ({ data: await ctx.need('risk').assess(kind, ctx.body, ctx.payment!) }),
})

export const RISK_ROUTES: readonly RouteDef[] = [
  riskRoute('transaction', Strict(BASE), {
    name: 'svc_transaction_risk',
    description:
      'Allow, review or block one transfer (the candidate: tx hash, log index, time, direction, token, amount, USD value, counterparty) into or out of a wallet, with the three probabilities from the S11 risk model. Paid (risk.assess).',
  }),
  riskRoute('token', Strict({ ...BASE, token: Strict({ symbol: Type.String({ minLength: 1, maxLength: 20 }) }) }), {
    name: 'svc_token_risk',
    description: 'The S11 risk assessment of a token movement: the same as svc_transaction_risk with the token symbol named. Paid (risk.assess).',
  }),
  riskRoute('wallet', Strict(BASE)),
  riskRoute('protocol', Strict(BASE)),
]
