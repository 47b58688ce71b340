/**
 * A real DeliveryService for serving tests (its journals on a real EmbeddedLog in a temp dir, the real URL guard and
 * pinned client), over a TestLedger; host names resolve through a fixed table (public addresses for example.com
 * names, so registration passes the guard without the internet), never through the system resolver. Closed at teardown.
 */
import { join } from 'node:path'
import type { Clock } from '../../../common/Clock.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import type { EventLog } from '../../../pipeline/log/EventLog.ts'
import { DeliveryService } from '../../../product/delivery/DeliveryService.ts'
import { HookSigner } from '../../../product/delivery/HookSigner.ts'
import { PinnedHttpClient } from '../../../product/delivery/PinnedHttpClient.ts'
import { UrlGuard } from '../../../product/delivery/UrlGuard.ts'
import { TestLedger } from '../delivery/ledgerBus.ts'
import { makeTempDir } from '../tmp.ts'

/** Names the test resolver answers: documentation-range-free public addresses, never connected to. */
export const PUBLIC_HOSTS: Record<string, string> = { 'hooks.example.com': '93.184.216.34', 'push.example.com': '93.184.216.35' }

/**
 * opts.log: put the delivery journals on the caller's log (which the caller closes, after the service) instead of one
 * of their own: a paid route's unit of work (the credits debit with the registration) is atomic on one log only.
 */
export async function withDelivery(
  t: { teardown(fn: () => unknown): void },
  clock: Clock,
  ledger = new TestLedger(clock.now()),
  opts: { log?: EventLog } = {},
): Promise<{ delivery: DeliveryService; ledger: TestLedger }> {
  const dir = await makeTempDir(t, 'svc-delivery-')
  const own = opts.log ? null : await EmbeddedLog.open(join(dir, 'log'))
  const log = opts.log ?? own!
  const delivery = await DeliveryService.open({
    log, ledger, clock,
    guard: UrlGuard.create({
      resolve: async (host) => {
        const address = PUBLIC_HOSTS[host]
        return address ? [{ address, family: 4 as const }] : []
      },
    }),
    http: PinnedHttpClient.create({ timeoutMs: 500 }),
    push: null,
    signer: await HookSigner.open({ dir: join(dir, 'delivery') }),
  })
  t.teardown(async () => {
    await delivery.close()
    await own?.close()
  })
  return { delivery, ledger }
}
