/** A real Arena (its journals on a real EmbeddedLog in a temp dir) for serving tests; closed at teardown. */
import type { Clock } from '../../../common/Clock.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { Arena } from '../../../product/arena/Arena.ts'
import { makeTempDir } from '../tmp.ts'

export async function withArena(t: { teardown(fn: () => unknown): void }, clock: Clock, opts: { optIn?: string[] } = {}): Promise<Arena> {
  const log = await EmbeddedLog.open(await makeTempDir(t, 'svc-arena-'))
  const arena = await Arena.open({ log, clock })
  for (const payer of opts.optIn ?? []) await arena.optIn(payer, true)
  t.teardown(async () => {
    await arena.close()
    await log.close()
  })
  return arena
}
