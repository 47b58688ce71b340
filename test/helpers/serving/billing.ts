/** A real BillingService (draws journal on a real EmbeddedLog in a temp dir) for serving tests; closed at teardown. */
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import type { EventLog } from '../../../pipeline/log/EventLog.ts'
import { BillingService } from '../../../product/billing/BillingService.ts'
import { systemClock, type Clock } from '../../../common/Clock.ts'
import { makeTempDir } from '../tmp.ts'

export const OPS_TOKEN = 'ops-token-for-tests-0123456789'

export async function withBilling(
  t: { teardown(fn: () => unknown): void },
  opts: { clock?: Clock; opsToken?: string | null; log?: EventLog } = {},
): Promise<BillingService> {
  const own = opts.log ? null : await EmbeddedLog.open(await makeTempDir(t, 'svc-billing-'))
  const log = opts.log ?? own!
  const billing = await BillingService.open({ log, clock: opts.clock ?? systemClock, opsToken: opts.opsToken === undefined ? OPS_TOKEN : opts.opsToken })
  t.teardown(async () => {
    await billing.close()
    await own?.close()
  })
  return billing
}
