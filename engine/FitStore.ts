/**
 * Fitted parameters by (question, version), kept in memory and, when a directory is given, on disk as
 * <dir>/<question_id>/<version>.json (written once, atomically; versions are content-hashed, so a file never changes).
 *
 * Replay needs the exact parameters a decision was made with, without the network or the wall clock: the record names
 * them by fitted_version (part of state_hash), and this store returns them. The version's suffix is the first 12 hex
 * digits of the JCS SHA-256 of the params (models/questions/BinaryQuestion.ts, S01_market_regime.ts), so a stored
 * file can be checked against its name.
 */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { jcsSha256 } from '../common/hash.ts'
import { writeFileAtomic } from '../pipeline/log/atomicFile.ts'
import { mkdirData } from '../pipeline/log/dataModes.ts'
import type { FittedParams } from '../models/QuestionModel.ts'
/** Whether fitted params still hash to their version's content-hash suffix (false also when it carries none). */
export function fittedVersionHolds(fitted: FittedParams): boolean {
  const m = /@([0-9a-f]{12})$/.exec(fitted.version)
  return m !== null && jcsSha256(fitted.params).slice(0, 12) === m[1]
}

function key(questionId: string, version: string): string {
  return `${questionId}\n${version}`
}

export class FitStore {
  private readonly fits = new Map<string, FittedParams>()

  private constructor(readonly dir: string | null) {}

  /** Loads every stored fit under `dir` (null: memory only). */
  static async open(dir: string | null): Promise<FitStore> {
    const store = new FitStore(dir)
    if (dir) {
      await mkdirData(dir)
      for (const q of await readdir(dir, { withFileTypes: true })) {
        if (!q.isDirectory()) continue
        for (const f of await readdir(join(dir, q.name))) {
          if (!f.endsWith('.json')) continue
          const fitted = JSON.parse(await readFile(join(dir, q.name, f), 'utf8')) as FittedParams
          store.fits.set(key(fitted.question_id, fitted.version), fitted)
        }
      }
    }
    return store
  }

  get(questionId: string, version: string): FittedParams | null {
    return this.fits.get(key(questionId, version)) ?? null
  }

  /** Keeps `fitted` (and writes it once when the store has a directory). */
  /** In memory at once (synchronously); the returned promise settles when the file is durable. */
  async put(fitted: FittedParams): Promise<void> {
    const k = key(fitted.question_id, fitted.version)
    if (this.fits.has(k)) return
    this.fits.set(k, fitted)
    if (this.dir) {
      await mkdirData(join(this.dir, fitted.question_id))
      await writeFileAtomic(join(this.dir, fitted.question_id, `${encodeURIComponent(fitted.version)}.json`), JSON.stringify(fitted))
    }
  }

  /**
   * Whether stored params still hash to their version: true / false, or 'unknown' when the fit is not stored or its
   * version carries no content hash.
   */
  verify(questionId: string, version: string): boolean | 'unknown' {
    const fitted = this.get(questionId, version)
    if (!fitted || !/@[0-9a-f]{12}$/.test(version)) return 'unknown'
    return fittedVersionHolds(fitted)
  }
}
