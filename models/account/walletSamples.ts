/**
 * Labelled samples for the account-scoped questions from one wallet history, by the same grammar as live answers:
 * the snapshot at t (walletFeatureSnapshot) and the question's resolution over (t, t + horizon] (accountWindow).
 *
 * S09 / S10: daily decision times aligned to the history's end (t = end − k days), from the first activity to the last
 * t whose horizon fits in the history (non-overlapping 24 h windows). S11: one row per valued in/out transfer τ whose
 * horizon fits (the transfer is the candidate; t = τ − 1 ms, so the candidate is not yet part of its own baseline),
 * subject kind 'wallet' (the kind is a label and never enters the numbers).
 */
import type { LabelledSample } from '../QuestionModel.ts'
import type { ResolutionWindow } from '../../pipeline/features/ResolutionWindow.ts'
import type { AccountQuestion } from '../questions/AccountQuestion.ts'
import { accountWindow, transferAsCandidate, walletFeatureSnapshot } from './accountSnapshot.ts'
import { DAY_MS } from '../../common/time.ts'
import { activitySpan } from './WalletFeatures.ts'
import type { WalletHistory } from '../../ingest/wallet/WalletProvider.ts'

export function accountResolutionWindow(history: WalletHistory, start: number, end: number): ResolutionWindow {
  const account = accountWindow(history, start, end)
  return { asset: history.address, start, end, bars: [], funding: [], startPrice: null, complete: account.complete, fundingComplete: false, account }
}

export function walletSamples(q: AccountQuestion, history: WalletHistory): LabelledSample[] {
  const out: LabelledSample[] = []
  const end = history.window.end
  const h = q.horizonMs
  const sample = (t: number, snapshot = walletFeatureSnapshot(history, t)) => {
    const frame = q.frame(snapshot)
    out.push({ snapshot, resolution: q.resolve(frame.conditions, accountResolutionWindow(history, t, t + h)) })
  }
  if (q.id === 'S11_risk') {
    for (const tr of history.transfers) {
      const c = transferAsCandidate(tr)
      const t = tr.time - 1
      if (!c || t < history.window.start || t + h > end) continue
      sample(t, walletFeatureSnapshot(history, t, { candidate: c, subjectKind: 'wallet' }))
    }
    return out
  }
  const { first } = activitySpan(history, end)
  if (first === null) return out
  for (let t = end - h; t >= Math.max(first, history.window.start); t -= DAY_MS) sample(t)
  return out.reverse()
}
