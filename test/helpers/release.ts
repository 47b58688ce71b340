/**
 * Releases for engine-level tests: record/releases/fromTicks.ts builds a body from ticks in memory; here it is handed
 * to the engine as ServedRelease, or re-sealed with one family replaced. What the service serves goes through
 * `svc release` and the gates (record/releases/bootstrap.ts); an engine test needs "the engine serves what it is given".
 */
import type { Tick } from '../../ingest/Tick.ts'
import type { FittedParams } from '../../models/QuestionModel.ts'
import { checksumOf, type ReleaseBody } from '../../record/releases/body.ts'
import { releaseOfTicks, type ReleaseOfTicksOptions } from '../../record/releases/fromTicks.ts'
import { ServedRelease, type SealedRelease } from '../../engine/ServedRelease.ts'

/** A sealed release fitted on the decisions of `ticks` whose window closed before `cut` (every sold market question). */
export function sealedReleaseOf(ticks: readonly Tick[], cut: number, o: ReleaseOfTicksOptions = {}): Promise<SealedRelease & { body: ReleaseBody }> {
  return releaseOfTicks(ticks, cut, o)
}

/** The same, as the engine serves it. */
export async function releaseOf(ticks: readonly Tick[], cut: number, o: ReleaseOfTicksOptions = {}): Promise<ServedRelease> {
  return ServedRelease.load(await releaseOfTicks(ticks, cut, o))
}

/** A release like `sealed` with one family's parameters replaced, sealed again under `version`. */
export function withFamily(sealed: SealedRelease & { body: ReleaseBody }, fitted: FittedParams, version = sealed.version): ServedRelease {
  const body: ReleaseBody = { ...sealed.body, version, families: { ...sealed.body.families, [fitted.question_id]: { ...sealed.body.families[fitted.question_id]!, fitted } } }
  return ServedRelease.load({ version, checksum: checksumOf(body), body })
}
