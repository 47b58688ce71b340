/**
 * The served release as a provider row of /readyz and /v1/health (slug `release`, kind `model`): ok while an active
 * release serves every family it holds; degraded when one or more of its families are refused at load (their
 * parameters or the body's checksum do not hold: error_class RELEASE_PARAMS_ALTERED or RELEASE_CHECKSUM_MISMATCH);
 * down when no release is active (NO_ACTIVE_RELEASE: every sold market question refuses). Not critical: the rest of
 * the service (market data, the record, billing, the duel) serves without a release, and a refusal is an answer.
 */
import type { ServedRelease } from '../../engine/ServedRelease.ts'
import type { ComputedHealth } from './ProviderHealth.ts'

export function releaseHealth(current: () => ServedRelease): () => ComputedHealth {
  return () => {
    const st = current().status()
    if (st.version === null) return { status: 'down', last_success_at: null, latency_ms: null, error_class: 'NO_ACTIVE_RELEASE' }
    const refused = Object.values(st.families).filter((v) => v !== 'served')
    if (refused.length === 0) return { status: 'ok', last_success_at: null, latency_ms: null, error_class: null }
    return { status: 'degraded', last_success_at: null, latency_ms: null, error_class: refused[0]!.toUpperCase() }
  }
}
