/**
 * The access log: one pino line per answered request, or a sampled share of them (SVC_ACCESS_LOG, app/config.ts):
 *
 *   {"level":30,...,"request_id":"…","route":"decisions.get","method":"GET","path":"/v1/decisions/…","status":200,"ms":0.41,"msg":"request"}
 *
 * with "rail" added when the call was paid. `route` is the registry id ("unmatched" when none); `path` is the raw
 * path (logs, unlike metric labels, may be as varied as the requests). Sampling is deterministic (every 1/share-th
 * answer, by an accumulator rather than a random draw), so a share of 0.1 logs exactly one answer in ten; a 5xx answer
 * is always logged, because it is what an operator looks for. Lines are info: LOG_LEVEL=warn silences them.
 */
import type { Logger } from 'pino'

export class AccessLog {
  private credit = 0
  /** Read once: below info (LOG_LEVEL=warn, the library default) a request builds no line at all. */
  private readonly infoEnabled: boolean

  /** share: the fraction of answers logged, above 0 (SVC_ACCESS_LOG=off creates no AccessLog) up to 1 (all). */
  constructor(
    private readonly log: Logger,
    private readonly share: number,
  ) {
    this.infoEnabled = log.isLevelEnabled('info')
  }

  answered(requestId: string, route: string, method: string, path: string, status: number, ms: number, rail: string | null): void {
    if (!this.infoEnabled) return
    if (this.share < 1 && status < 500) {
      this.credit += this.share
      if (this.credit < 1) return
      this.credit -= 1
    }
    const line: Record<string, unknown> = { request_id: requestId, route, method, path, status, ms: Math.round(ms * 100) / 100 }
    if (rail !== null) line.rail = rail
    this.log.info(line, 'request')
  }
}
