/**
 * The HTTP request counter and latency histogram, by route id and status:
 *
 *   svc_http_requests_total{route,status}
 *   svc_http_request_duration_seconds_bucket{route,status,le} (+ _sum, _count)
 *
 * Why not prom-client's Counter and Histogram: their labelled children hash the label values into a string key on
 * every inc()/observe() (prom-client 15, lib/histogram.js observe()), which is string building on the hottest path the
 * service has. Here a request costs two array increments on a series found by route id and status in two small maps;
 * prom-client still owns the registry and the text format: these two objects are registered in it and read at
 * scrape time (Registry.registerMetric takes any metric with name, help, type and get()).
 *
 * Cardinality is bounded by construction: route ids come from the route registry, and every request that matched no
 * route is counted under the one label UNMATCHED_ROUTE, never under its path. Statuses are the few the service writes.
 */
import type { Registry } from 'prom-client'

/** The route label of a request that matched no route of the registry (404, 405, a malformed path). */
export const UNMATCHED_ROUTE = 'unmatched'

/** Upper bounds in seconds: sub-millisecond memory reads up to multi-second paid calls through a facilitator. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const

interface Series {
  route: string
  status: string
  /** counts[i]: observations in (bucket i−1, bucket i]; the last slot is above every bound (+Inf). Cumulated at scrape. */
  counts: Float64Array
  count: number
  sum: number
}

interface MetricValue {
  value: number
  labels: Record<string, string>
  metricName?: string
}

export class RequestMetrics {
  private readonly byRoute = new Map<string, Map<number, Series>>()
  /** In first-seen order, for a stable exposition. */
  private readonly all: Series[] = []

  constructor(registry: Registry) {
    const series = () => this.all
    registry.registerMetric({
      name: 'svc_http_requests_total',
      help: 'HTTP requests answered, by route id (the route registry; "unmatched" for no route) and status',
      type: 'counter',
      get: async () => ({
        name: 'svc_http_requests_total',
        help: 'HTTP requests answered, by route id (the route registry; "unmatched" for no route) and status',
        type: 'counter',
        aggregator: 'sum',
        values: series().map((s): MetricValue => ({ value: s.count, labels: { route: s.route, status: s.status } })),
      }),
    } as never)
    registry.registerMetric({
      name: 'svc_http_request_duration_seconds',
      help: 'Time from dispatch to the answer written, by route id and status',
      type: 'histogram',
      get: async () => ({
        name: 'svc_http_request_duration_seconds',
        help: 'Time from dispatch to the answer written, by route id and status',
        type: 'histogram',
        aggregator: 'sum',
        values: series().flatMap(histogramValues),
      }),
    } as never)
  }

  /** One answered request. */
  observe(route: string, status: number, seconds: number): void {
    let byStatus = this.byRoute.get(route)
    if (byStatus === undefined) this.byRoute.set(route, (byStatus = new Map()))
    let s = byStatus.get(status)
    if (s === undefined) {
      s = { route, status: String(status), counts: new Float64Array(LATENCY_BUCKETS.length + 1), count: 0, sum: 0 }
      byStatus.set(status, s)
      this.all.push(s)
    }
    let i = 0
    while (i < LATENCY_BUCKETS.length && seconds > (LATENCY_BUCKETS[i] as number)) i++
    s.counts[i] = (s.counts[i] as number) + 1
    s.count++
    s.sum += seconds
  }
}

function histogramValues(s: Series): MetricValue[] {
  const labels = { route: s.route, status: s.status }
  const out: MetricValue[] = []
  let cumulative = 0
  for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
    cumulative += s.counts[i] as number
    out.push({ value: cumulative, labels: { ...labels, le: String(LATENCY_BUCKETS[i]) }, metricName: 'svc_http_request_duration_seconds_bucket' })
  }
  out.push({ value: s.count, labels: { ...labels, le: '+Inf' }, metricName: 'svc_http_request_duration_seconds_bucket' })
  out.push({ value: s.sum, labels, metricName: 'svc_http_request_duration_seconds_sum' })
  out.push({ value: s.count, labels, metricName: 'svc_http_request_duration_seconds_count' })
  return out
}
