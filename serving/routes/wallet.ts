/** Wallet routes (spec, Paid intelligence routes: wallet profile, state, positions, events). Transport only. */
import { Open, Type } from '../../common/schema.ts'
import type { EndpointPricingKey } from '../../product/billing/pricing.ts'
import { WALLET_EVENTS, WALLET_POSITIONS, WALLET_PROFILE, WALLET_STATE } from '../../product/wallet/schemas.ts'
import { WALLET_PARAMS, env, paid } from './define.ts'
import type { McpTool, RouteDef } from './types.ts'

const RESPONSES = { profile: WALLET_PROFILE, state: WALLET_STATE, positions: WALLET_POSITIONS } as const

const walletRoute = (
  id: string, suffix: string, summary: string, key: EndpointPricingKey, call: 'profile' | 'state' | 'positions', mcp?: McpTool,
): RouteDef => ({
  id, method: 'GET', path: `/v1/wallet/{chain}/{address}${suffix}`, summary, tags: ['wallet'], pay: paid(key), needs: ['wallets'],
  ...(mcp ? { mcp } : {}),
  request: { params: WALLET_PARAMS }, response: env(RESPONSES[call]), errors: ['PROVIDER_DOWN'],
  handler: async (ctx) => ({ data: await ctx.need('wallets')[call]('base', String(ctx.params.address), ctx.payment!) }),
})

export const WALLET_ROUTES: readonly RouteDef[] = [
  walletRoute('wallet.profile', '', 'Wallet profile', 'wallet.profile', 'profile', {
    name: 'svc_wallet_intelligence',
    description:
      "A wallet's profile: its position on the wallet state machine (WATCHING .. EXITING), first and last activity, 30-day net flow and whether the sample is adequate. Paid (wallet.profile); 503 PROVIDER_DOWN when no wallet provider is wired.",
  }),
  walletRoute('wallet.state', '/state', 'Wallet state machine position', 'wallet.state', 'state', {
    name: 'svc_wallet_state',
    description: "A wallet's current state-machine position and since when, with its sample adequacy. Paid (wallet.state).",
  }),
  walletRoute('wallet.positions', '/positions', 'Wallet balances', 'wallet.state', 'positions'),
  {
    id: 'wallet.events',
    method: 'GET',
    path: '/v1/wallet/{chain}/{address}/events',
    summary: 'Paginated wallet transfer events (unvalued transfers are kept, marked as such)',
    tags: ['wallet'],
    pay: paid('wallet.events'),
    needs: ['wallets'],
    request: {
      params: WALLET_PARAMS,
      query: Open({
        window: Type.Optional(Type.String({ pattern: '^[0-9]+[hd]$', default: '24h' })),
        cursor: Type.Optional(Type.String({ maxLength: 256 })),
      }),
    },
    response: env(WALLET_EVENTS),
    errors: ['PROVIDER_DOWN'],
    handler: async (ctx) => ({
      data: await ctx.need('wallets').events(
        'base',
        String(ctx.params.address),
        { window: String(ctx.query.window), cursor: typeof ctx.query.cursor === 'string' ? ctx.query.cursor : null },
        ctx.payment!,
      ),
    }),
  },
]
