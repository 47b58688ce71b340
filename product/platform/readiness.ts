/**
 * The service's health from its providers' (GET /healthz, /health, /readyz).
 *
 * Spec (/readyz): "{ status, uptime_s, providers: [...] }; status degraded when any provider is degraded; 503 when
 * down". A critical provider down makes the service down; a non-critical one down only degrades it. No providers
 * registered: ok.
 */
import type { Static } from '../../common/schema.ts'
import type { ClusterStatusSource, DataTimeSource, HEALTH, ProviderHealthRow, ProviderRegistry, ProviderStatus } from './schemas.ts'

const STATUS_RANK: Record<ProviderStatus, number> = { ok: 0, degraded: 1, down: 2 }

export function rollupStatus(providers: readonly ProviderHealthRow[]): ProviderStatus {
  let worst: ProviderStatus = 'ok'
  for (const p of providers) {
    const s: ProviderStatus = p.status === 'down' && !p.critical ? 'degraded' : p.status
    if (STATUS_RANK[s] > STATUS_RANK[worst]) worst = s
  }
  return worst
}

export function health(providers: ProviderRegistry | undefined, startedAtMs: number, nowMs: number, dataTime?: DataTimeSource, cluster?: ClusterStatusSource): Static<typeof HEALTH> {
  const list = providers?.list() ?? []
  return {
    status: rollupStatus(list),
    uptime_s: Math.max(0, Math.floor((nowMs - startedAtMs) / 1000)),
    providers: list,
    data_time: dataTime ? dataTime.status() : null,
    venue: dataTime?.venue() ?? null,
    cluster: cluster?.status() ?? null,
  }
}
