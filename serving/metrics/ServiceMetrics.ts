/**
 * Everything GET /metrics exposes, in one prom-client Registry that the composition root creates and hands in (never
 * prom-client's global one, so two servers in one process, as in tests, never share a series):
 *
 *   svc_http_requests_total, svc_http_request_duration_seconds   RequestMetrics: by route id and status
 *   svc_paid_calls_total{rail}, svc_paid_credits_total{rail},     a paid call whose answer was charged (credits, x402;
 *   svc_paid_usd_total{rail}                                      fee routes settle nothing on this deployment)
 *   svc_consumer_lag{group,topic}                                 EventLog.consumerLag(), read at scrape time
 *   svc_decisions_recorded_total{question}                        decisions that entered the ledger since start
 *   svc_resolutions_total{question,outcome}                       clocks resolved since start (the outcome bus)
 *   process_*, nodejs_*                                           prom-client's default metrics
 *
 * prom-client stays in serving/metrics/: the domains only expose what is counted (the event log its consumers' lag,
 * the engine its ledger bus), and this module reads them.
 */
import { collectDefaultMetrics, Counter, Gauge, type Registry } from 'prom-client'
import type { LedgerBus, Subscription } from '../../engine/LedgerBus.ts'
import type { ConsumerLag } from '../../pipeline/log/EventLog.ts'
import type { Price } from '../../product/billing/pricing.ts'
import { RequestMetrics } from './RequestMetrics.ts'

export const PAID_RAILS = ['credits', 'x402', 'fee'] as const
export type PaidRail = (typeof PAID_RAILS)[number]

/** What the lag gauge reads: the event log (pipeline/log/EventLog.ts). */
export interface LagSource {
  consumerLag(): Promise<ConsumerLag[]>
}

/** Throwaway readers (Journal.readAll) name their group with a random UUID; one label stands for all of them. */
const RANDOM_ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi

export class ServiceMetrics {
  readonly requests: RequestMetrics
  private readonly paidCalls: Counter<'rail'>
  private readonly paidCredits: Counter<'rail'>
  private readonly paidUsd: Counter<'rail'>
  private readonly rails: Record<PaidRail, { calls: Counter.Internal; credits: Counter.Internal; usd: Counter.Internal }>
  private readonly decisions: Counter<'question'>
  private readonly resolutions: Counter<'question' | 'outcome'>
  private readonly subscriptions: Subscription[] = []
  private lagSources: LagSource[] = []

  constructor(readonly registry: Registry) {
    collectDefaultMetrics({ register: registry })
    this.requests = new RequestMetrics(registry)
    this.paidCalls = new Counter({ name: 'svc_paid_calls_total', help: 'Paid calls answered and charged, by payment rail', labelNames: ['rail'], registers: [registry] })
    this.paidCredits = new Counter({ name: 'svc_paid_credits_total', help: 'Credits charged for paid calls (the route price in credits), by payment rail', labelNames: ['rail'], registers: [registry] })
    this.paidUsd = new Counter({ name: 'svc_paid_usd_total', help: 'USD charged for paid calls (the route price), by payment rail', labelNames: ['rail'], registers: [registry] })
    const rail = (r: PaidRail) => ({ calls: this.paidCalls.labels(r), credits: this.paidCredits.labels(r), usd: this.paidUsd.labels(r) })
    // Every rail is exposed from the start (at 0), so a dashboard's rate() has a series before the first sale.
    this.rails = { credits: rail('credits'), x402: rail('x402'), fee: rail('fee') }
    for (const r of Object.values(this.rails)) for (const c of [r.calls, r.credits, r.usd]) c.inc(0)
    this.decisions = new Counter({ name: 'svc_decisions_recorded_total', help: 'Decisions that entered the ledger since the process started, by question', labelNames: ['question'], registers: [registry] })
    this.resolutions = new Counter({
      name: 'svc_resolutions_total',
      help: 'Decision clocks resolved since the process started, by question and outcome (obtains, not, unresolvable)',
      labelNames: ['question', 'outcome'],
      registers: [registry],
    })
    const sources = () => this.lagSources
    new Gauge({
      name: 'svc_consumer_lag',
      help: 'Records between a running consumer group\'s position and the end of a topic (end offset - position, summed over partitions)',
      labelNames: ['group', 'topic'],
      registers: [registry],
      async collect() {
        this.reset()
        for (const source of sources()) {
          for (const { groupId, topic, lag } of await source.consumerLag()) this.inc({ group: groupId.replace(RANDOM_ID, '{id}'), topic }, lag)
        }
      },
    })
  }

  /** The Prometheus text format's content type (text/plain; version=0.0.4). */
  get contentType(): string {
    return this.registry.contentType
  }

  /** The exposition: every metric, collected now. */
  render(): Promise<string> {
    return this.registry.metrics()
  }

  /** A paid call was answered and charged the price (what the route costs on that rail). */
  paid(rail: PaidRail, price: Price | null): void {
    const r = this.rails[rail]
    r.calls.inc()
    if (price) {
      r.credits.inc(price.credits)
      r.usd.inc(Number(price.usd))
    }
  }

  /** Reports the consumer lag of this event log (the service has one; tests may add more). */
  watchLag(source: LagSource): void {
    this.lagSources = [...this.lagSources, source]
  }

  /**
   * Counts what enters the ledger from now on (replay off: the index rebuilt at start is history, not this process's
   * work, and a counter that started at the ledger's size would read as a burst to rate()).
   */
  watchLedger(bus: LedgerBus): void {
    this.subscriptions.push(
      bus.decisions.subscribe('metrics.decisions', (d) => void this.decisions.inc({ question: d.question_id }), { replay: false }),
      bus.resolutions.subscribe('metrics.resolutions', (e) => void this.resolutions.inc({ question: e.outcome.question_id, outcome: e.outcome.outcome }), { replay: false }),
    )
  }

  /** Stops reading the domains (the registry itself holds no resource). */
  close(): void {
    for (const s of this.subscriptions.splice(0)) s.unsubscribe()
    this.lagSources = []
  }
}
