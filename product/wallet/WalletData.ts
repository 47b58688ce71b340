/** What the routes read of the wallet domain (spec, paid wallet routes). WalletServices implements it. */
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'

export interface WalletData {
  profile(chain: 'base', address: string, payment: PaidCall): Promise<unknown>
  state(chain: 'base', address: string, payment: PaidCall): Promise<unknown>
  positions(chain: 'base', address: string, payment: PaidCall): Promise<unknown>
  events(chain: 'base', address: string, q: { window: string; cursor: string | null }, payment: PaidCall): Promise<unknown>
}
