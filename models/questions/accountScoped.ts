/**
 * S09..S11: account-scoped questions (spec catalog: "the subject is a wallet. S11 is the risk question over
 * transaction, token, wallet and protocol subjects"). They need a wallet provider, which is separate work (the
 * account pipeline); until it is wired they are declared here so the registry stays the one list, and every
 * evaluation refuses with suppress 'account_scoped_needs_provider'.
 */
import { UnsoldQuestion } from './UnsoldQuestion.ts'

const reason = () => 'account_scoped_needs_provider'

export const S09_wallet_state = new UnsoldQuestion({ id: 'S09_wallet_state', label: 'Wallet state', scope: 'account', horizonMs: 3_600_000, reason })
export const S10_wallet_flow = new UnsoldQuestion({ id: 'S10_wallet_flow', label: 'Wallet flow', scope: 'account', horizonMs: 3_600_000, reason })
export const S11_risk = new UnsoldQuestion({ id: 'S11_risk', label: 'Risk', scope: 'account', horizonMs: 3_600_000, reason })
