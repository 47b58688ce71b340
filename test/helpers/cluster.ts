/** Two or more `svc start` instances of one cluster in a test (bench/clusterInstance.ts spawns each one). */
import type { ClusterInstance } from '../../bench/clusterInstance.ts'
import { within } from './until.ts'

/** How long an instance may take to be ready: a first start warms up its simulated history on a shared 2-core machine. */
export const READY_WITHIN_MS = 420_000

export const ready = async (url: string): Promise<boolean> => (await fetch(`${url}/readyz`)).status === 200

/**
 * Starts `a`, waits until it is ready (it then holds the leases: the first member of each group), then `b` beside it,
 * and resolves both URLs once both are ready.
 */
export async function startPair(start: (name: 'a' | 'b') => ClusterInstance | Promise<ClusterInstance>): Promise<{ a: ClusterInstance; b: ClusterInstance; urlA: string; urlB: string }> {
  const a = await start('a')
  const urlA = await a.url
  await within('the first instance ready', READY_WITHIN_MS, () => ready(urlA))
  const b = await start('b')
  const urlB = await b.url
  await within('both instances ready', READY_WITHIN_MS, async () => (await ready(urlA)) && (await ready(urlB)))
  return { a, b, urlA, urlB }
}
