/** Waits until `cond` holds (polling every 25 ms), or fails after `timeoutMs` wall ms naming what it waited for. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/**
 * Waits until `check` holds (polling every 250 ms; a check that throws counts as not yet: an instance still starting
 * refuses connections), or fails after `withinMs` naming what it waited for; resolves with the ms it took.
 */
export async function within(what: string, withinMs: number, check: () => Promise<boolean> | boolean): Promise<number> {
  const t0 = Date.now()
  for (;;) {
    if (await Promise.resolve().then(check).catch(() => false)) return Date.now() - t0
    if (Date.now() - t0 > withinMs) throw new Error(`${what}: not within ${withinMs} ms`)
    await new Promise((r) => setTimeout(r, 250))
  }
}
