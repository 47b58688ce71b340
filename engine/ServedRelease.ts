/**
 * The release the engine serves: the fitted parameters of every sold market question come from one activated
 * release's sealed body, and from nothing else (spec, Versioning 5: "Releases are sealed, checksummed and
 * append-only; rollback is a new activation of the parent; nothing is tuned at runtime").
 *
 * Loading checks what was sealed before anything is served:
 * - the body's JCS SHA-256 must equal the checksum sealed beside it (record/releases/body.ts checksumOf);
 * - each family's parameters must still hash to their content-hashed version (FitStore.ts fittedVersionHolds).
 * A family whose parameters were altered refuses `release_params_altered`; a body whose checksum fails while every
 * family's parameters hold (something else in it changed) refuses every family `release_checksum_mismatch`. There is
 * no fallback to another release or to a fit: a refused family answers insufficient_confidence with that reason, and
 * the reason is shown on /readyz and /v1/signals.
 *
 * Immutable: a switch is a new ServedRelease, so an ask that read it keeps the release it started with.
 */
import { jcsSha256 } from '../common/hash.ts'
import type { FittedParams } from '../models/QuestionModel.ts'
import { fittedVersionHolds } from './FitStore.ts'

/** What the release store hands the engine: the sealed row's version and checksum, and the body as stored. */
export interface SealedRelease {
  version: string
  /** The checksum sealed in the release row (never recomputed from the body by the caller). */
  checksum: string
  body: {
    version: string
    method: { name: string; jev_version: string }
    families: Record<string, { fitted: FittedParams }>
  }
}

/** Why a sold market question has no parameters to answer with. */
export const RELEASE_REFUSALS = ['no_active_release', 'release_checksum_mismatch', 'release_params_altered', 'release_lacks_family'] as const
export type ReleaseRefusal = (typeof RELEASE_REFUSALS)[number]

export interface ServedReleaseStatus {
  /** The active release's version, or null when none is active. */
  version: string | null
  checksum: string | null
  /** The body hashes to its sealed checksum. */
  checksum_verified: boolean | null
  jev_version: string | null
  /** Families of the body and whether each is served, else the refusal reason. */
  families: Record<string, 'served' | ReleaseRefusal>
}

export class ServedRelease {
  private constructor(
    readonly version: string | null,
    readonly checksum: string | null,
    readonly checksumVerified: boolean | null,
    /** The model layer version of the release's method (the record's jev_version for its decisions). */
    readonly jevVersion: string | null,
    private readonly served: ReadonlyMap<string, FittedParams>,
    private readonly refused: ReadonlyMap<string, ReleaseRefusal>,
  ) {}

  /** Nothing active: every sold market question refuses `no_active_release`. */
  static none(): ServedRelease {
    return new ServedRelease(null, null, null, null, new Map(), new Map())
  }

  /** Verifies a sealed release (checksum, then each family's content hash) and serves what holds. */
  static load(sealed: SealedRelease): ServedRelease {
    const body = sealed.body
    const verified = jcsSha256(body) === sealed.checksum && body.version === sealed.version
    const served = new Map<string, FittedParams>()
    const refused = new Map<string, ReleaseRefusal>()
    for (const [id, family] of Object.entries(body.families ?? {})) {
      const fitted = family?.fitted
      if (!fitted || fitted.question_id !== id || !fittedVersionHolds(fitted)) refused.set(id, 'release_params_altered')
      else served.set(id, fitted)
    }
    if (!verified && refused.size === 0) {
      for (const id of served.keys()) refused.set(id, 'release_checksum_mismatch')
      served.clear()
    }
    return new ServedRelease(sealed.version, sealed.checksum, verified, body.method?.jev_version ?? null, served, refused)
  }

  /** The parameters a market question answers with under this release, or null (see refusal()). */
  fitted(questionId: string): FittedParams | null {
    return this.served.get(questionId) ?? null
  }

  /** Why `questionId` has no parameters here (null when it has). */
  refusal(questionId: string): ReleaseRefusal | null {
    if (this.served.has(questionId)) return null
    if (this.version === null) return 'no_active_release'
    return this.refused.get(questionId) ?? 'release_lacks_family'
  }

  /** Every family's parameters served (the fit store keeps them, so replay finds them by fitted_version). */
  fits(): FittedParams[] {
    return [...this.served.values()]
  }

  status(): ServedReleaseStatus {
    const families: ServedReleaseStatus['families'] = {}
    for (const id of [...this.served.keys(), ...this.refused.keys()].sort()) families[id] = this.refusal(id) ?? 'served'
    return { version: this.version, checksum: this.checksum, checksum_verified: this.checksumVerified, jev_version: this.jevVersion, families }
  }
}
