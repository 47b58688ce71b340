/**
 * Sealed releases on disk: release rows, gate rows and activation rows as Parquet under $DATA/parquet/record/
 * (sql/releaseTables.ts), read back through the catalog's views (sql/030_releases.sql) in this store's own in-memory
 * DuckDB (one writer per database file: sql/Catalog.ts; Parquet needs no database to be read or written).
 *
 * Append-only: every file is written once under a name that says what it holds and is never replaced; a second write
 * of the same name fails (the sealed temp file is hard-linked to its final name, which refuses an existing one), so
 * a release is built once, evaluated once (its four gate rows in one file) and activated at most once
 * (`activate-<version>.parquet`). A rollback is a new activation row of the parent. Statuses (candidate, active,
 * superseded, rejected) are derived from the rows at read time, never stored.
 */
import { chmod, link, readdir, rm } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { canonicalJson } from '../../common/jcs.ts'
import { jcsSha256 } from '../../common/hash.ts'
import { DATA_FILE_MODE, mkdirData } from '../../pipeline/log/dataModes.ts'
import { fsyncPath, sqlString } from '../../pipeline/sinks/parquetFile.ts'
import { columnsDdl, quoteIdent } from '../../pipeline/sinks/TopicTable.ts'
import type { JsonRow } from '../../sql/Catalog.ts'
import { RELEASE_ACTIVATION_ROWS, RELEASE_GATE_ROWS, RELEASE_ROWS, releaseTableRoot, type ReleaseTable } from '../../sql/releaseTables.ts'
import { RecordDb } from '../RecordDb.ts'
import { checksumOf, majorOf, type ReleaseBody } from './body.ts'
import { GATES, type Evaluation, type FamilyDetail, type GateName, type GateVerdict } from './evaluate.ts'
import { ReleaseError } from './ReleaseError.ts'
import type { ReleaseStatus } from './schemas.ts'

export { RELEASE_STATUSES, type ReleaseStatus } from './schemas.ts'

export interface GateRow {
  gate: GateName
  met: boolean
  measured: Record<string, unknown>
  reason?: string
}

/** The spec's release feed item. */
export interface ReleaseFeedItem {
  version: string
  parent: string | null
  status: ReleaseStatus
  created_at: string
  activated_at: string | null
  dataset: { window_start: string; window_end: string; n_realized: number; dataset_hash: string }
  evaluation: Evaluation | null
  gates: GateRow[]
  gate_verdicts: Record<GateName, GateVerdict> | null
  measured_at: string | null
}

/** The release detail: the feed item, the sealed body verbatim with its checksum, and per-family details. */
export interface ReleaseDetail extends ReleaseFeedItem {
  checksum: string
  body: ReleaseBody
  families: Record<string, FamilyDetail> | null
}

export interface ActiveRelease {
  version: string
  activated_at: string
  delta_brier: number | null
  delta_brier_ci: [number, number] | null
}

export interface LadderFacts {
  /** Major version of the active release, or null when none is active. */
  active_release_major: number | null
  /** 1 when a release that was ever activated had holdout skill over its incumbent with a 95 % interval clear of zero. */
  release_skill_ci_above_zero: number
}

/** What the HTTP layer and the intelligence snapshot read (Services part 'releases'). */
export interface ReleaseReads {
  list(filter?: { status?: ReleaseStatus | null }): Promise<ReleaseFeedItem[]>
  detail(version: string): Promise<ReleaseDetail | null>
  activeRelease(): Promise<ActiveRelease | null>
  ladderFacts(): Promise<LadderFacts>
}

interface SealedEvaluation {
  evaluation: Evaluation
  families: Record<string, FamilyDetail>
}

const SEQ_DIGITS = 12


export class ReleaseStore implements ReleaseReads {
  private constructor(
    readonly dataDir: string,
    private readonly db: RecordDb,
    /** Closed with the store when the store opened it; a shared one belongs to its opener. */
    private readonly ownsDb: boolean,
  ) {}

  /**
   * Over the data dir's record database: its views include the release views (sql/030_releases.sql) and opening it
   * writes their schema anchors. Pass the service's RecordDb to share it; without one the store opens its own.
   */
  static async open(dataDir: string, db?: RecordDb): Promise<ReleaseStore> {
    const dir = resolve(dataDir)
    if (db) return new ReleaseStore(dir, db, false)
    try {
      return new ReleaseStore(dir, await RecordDb.open(dir), true)
    } catch (err) {
      throw new ReleaseError('RELEASE_WRITE', `opening the release tables in ${dir}: ${(err as Error).message}`, { cause: err })
    }
  }

  close(): void {
    if (this.ownsDb) this.db.close()
  }

  private async query(sql: string, params?: Record<string, string | number | boolean | null>): Promise<JsonRow[]> {
    try {
      return await this.db.query(sql, params)
    } catch (err) {
      throw new ReleaseError('RELEASE_WRITE', (err as Error).message, { cause: err })
    }
  }

  /**
   * Writes `rows` of `table` as one Parquet file named `name`, once: COPY to a temp file, fsync, hard-link to the
   * final name (fails if it exists), fsync the directory. Returns false when the name was taken.
   */
  private writeOnce(table: ReleaseTable, name: string, rows: ReadonlyArray<ReadonlyArray<string | number | boolean | null>>): Promise<boolean> {
    return this.db.exclusive(async (conn) => {
      const finalPath = join(releaseTableRoot(this.dataDir, table), name)
      const dir = dirname(finalPath)
      const tmp = join(dir, `.${basename(finalPath)}.${process.pid}.tmp`)
      await mkdirData(dir)
      const staging = `staging_${table.dir}`
      try {
        await conn.run(`CREATE OR REPLACE TEMP TABLE ${quoteIdent(staging)} (${columnsDdl(table.columns)})`)
        const placeholders = table.columns.map((_, i) => `$${i + 1}`).join(', ')
        for (const row of rows) await conn.run(`INSERT INTO ${quoteIdent(staging)} VALUES (${placeholders})`, [...row])
        await conn.run(`COPY (SELECT * FROM ${quoteIdent(staging)}) TO ${sqlString(tmp)} (FORMAT parquet, COMPRESSION zstd)`)
        await conn.run(`DROP TABLE ${quoteIdent(staging)}`)
        // DuckDB creates the file under the process umask; the data folder's mode is set here whatever that is.
        await chmod(tmp, DATA_FILE_MODE)
        await fsyncPath(tmp)
        try {
          await link(tmp, finalPath)
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false
          throw err
        }
        await fsyncPath(dir)
        return true
      } catch (err) {
        throw new ReleaseError('RELEASE_WRITE', `writing ${finalPath}: ${(err as Error).message}`, { cause: err })
      } finally {
        await rm(tmp, { force: true })
      }
    })
  }

  /** Seals a candidate: one release row with the body verbatim. A version is never reused (RELEASE_EXISTS). */
  async putRelease(body: ReleaseBody, createdAt: string): Promise<{ checksum: string }> {
    const checksum = checksumOf(body)
    const wrote = await this.writeOnce(RELEASE_ROWS, `release-${body.version}.parquet`, [
      [body.version, body.parent, checksum, createdAt, body.method.jev_version, body.dataset.dataset_hash, body.dataset.window_start, body.dataset.window_end, body.dataset.n_realized, canonicalJson(body)],
    ])
    if (!wrote) throw new ReleaseError('RELEASE_EXISTS', `release ${body.version} is already sealed`)
    return { checksum }
  }

  /** Seals an evaluation's four gate rows together (one file); a release is evaluated once (ALREADY_EVALUATED). */
  async putEvaluation(version: string, sealed: SealedEvaluation, gates: Record<GateName, GateVerdict>, measuredAt: string): Promise<string> {
    const evaluationJson = canonicalJson(sealed)
    const evaluationId = jcsSha256(sealed)
    const rows = GATES.map((g) => [version, g, gates[g].met, canonicalJson(gates[g].measured), gates[g].reason ?? null, measuredAt, evaluationId, evaluationJson] as const)
    const wrote = await this.writeOnce(RELEASE_GATE_ROWS, `gates-${version}.parquet`, rows)
    if (!wrote) throw new ReleaseError('ALREADY_EVALUATED', `release ${version} already has sealed gate rows`)
    return evaluationId
  }

  private async nextActivationSeq(): Promise<number> {
    const files = await readdir(releaseTableRoot(this.dataDir, RELEASE_ACTIVATION_ROWS)).catch(() => [] as string[])
    const [row] = await this.query('SELECT coalesce(max(seq), 0) AS seq FROM release_activations')
    return Math.max(Number(row?.seq ?? 0), files.filter((f) => f.endsWith('.parquet') && !f.startsWith('_')).length) + 1
  }

  /**
   * Activates a candidate whose four sealed gates all passed. One-shot: the activation file is named by the version,
   * so a second activation of it refuses even when two operators race.
   */
  async activate(version: string, at: string): Promise<{ seq: number; previous: string | null }> {
    const rel = await this.detail(version)
    if (!rel) throw new ReleaseError('RELEASE_NOT_FOUND', `no release ${version}`)
    if (!rel.gate_verdicts) throw new ReleaseError('NOT_EVALUATED', `release ${version} has no sealed gate rows: run svc release evaluate ${version}`)
    const failed = rel.gates.filter((g) => !g.met)
    if (failed.length > 0) throw new ReleaseError('GATES_NOT_MET', `release ${version} failed ${failed.map((g) => `${g.gate} (${g.reason ?? 'not met'})`).join(', ')}`)
    if (rel.activated_at !== null) throw new ReleaseError('ALREADY_ACTIVATED', `release ${version} was activated at ${rel.activated_at}; activation is one-shot`)
    const previous = (await this.activeRelease())?.version ?? null
    const seq = await this.nextActivationSeq()
    const wrote = await this.writeOnce(RELEASE_ACTIVATION_ROWS, `activate-${version}.parquet`, [[seq, version, 'activate', previous, at]])
    if (!wrote) throw new ReleaseError('ALREADY_ACTIVATED', `release ${version} was activated before; activation is one-shot`)
    return { seq, previous }
  }

  /** A new activation of the active release's parent. */
  async rollback(at: string): Promise<{ seq: number; from: string; to: string }> {
    const active = await this.activeRelease()
    if (!active) throw new ReleaseError('NO_ACTIVE_RELEASE', 'no release is active')
    const rel = (await this.detail(active.version))!
    if (rel.parent === null) throw new ReleaseError('NO_PARENT', `the active release ${rel.version} has no parent`)
    if (!(await this.detail(rel.parent))) throw new ReleaseError('RELEASE_NOT_FOUND', `the parent ${rel.parent} of ${rel.version} is not in this data folder`)
    const seq = await this.nextActivationSeq()
    const wrote = await this.writeOnce(RELEASE_ACTIVATION_ROWS, `rollback-${String(seq).padStart(SEQ_DIGITS, '0')}.parquet`, [[seq, rel.parent, 'rollback', rel.version, at]])
    if (!wrote) throw new ReleaseError('RELEASE_WRITE', `activation ${seq} was written concurrently; run the rollback again`)
    return { seq, from: rel.version, to: rel.parent }
  }

  /**
   * The activation files as one string: it changes exactly when an activation or a rollback is sealed (files are only
   * ever added), so a running service learns of one from a directory listing, without a query.
   */
  async activationsStamp(): Promise<string> {
    const files = await readdir(releaseTableRoot(this.dataDir, RELEASE_ACTIVATION_ROWS)).catch(() => [] as string[])
    return files.filter((f) => f.endsWith('.parquet') && !f.startsWith('.')).sort().join('\n')
  }

  /** The sealed body of a release, or null. */
  async body(version: string): Promise<{ body: ReleaseBody; checksum: string } | null> {
    const [row] = await this.query('SELECT body, checksum FROM release_rows WHERE version = $v', { v: version })
    if (!row) return null
    return { body: JSON.parse(row.body as string) as ReleaseBody, checksum: row.checksum as string }
  }

  private async items(where: string, params: Record<string, string>): Promise<ReleaseDetail[]> {
    const rels = await this.query(
      `SELECT r.version, r.parent, r.status, r.created_at, r.activated_at, r.checksum, r.window_start, r.window_end, r.n_realized, r.dataset_hash, b.body
       FROM releases r JOIN release_rows b USING (version) ${where}`,
      params,
    )
    if (rels.length === 0) return []
    const gateRows = await this.query('SELECT version, gate, met, measured, reason, measured_at FROM release_gates')
    const evals = await this.query('SELECT version, evaluation FROM release_evaluations')
    const out: ReleaseDetail[] = []
    for (const r of rels) {
      const version = r.version as string
      const mine = gateRows.filter((g) => g.version === version)
      const order = (g: JsonRow) => GATES.indexOf(g.gate as GateName)
      mine.sort((a, b) => order(a) - order(b))
      const gates: GateRow[] = mine.map((g) => ({ gate: g.gate as GateName, met: g.met as boolean, measured: JSON.parse(g.measured as string) as Record<string, unknown>, ...(g.reason === null ? {} : { reason: g.reason as string }) }))
      const ev = evals.find((e) => e.version === version)
      const sealed = ev ? (JSON.parse(ev.evaluation as string) as SealedEvaluation) : null
      const verdicts = gates.length === GATES.length ? (Object.fromEntries(gates.map(({ gate, ...v }) => [gate, v])) as Record<GateName, GateVerdict>) : null
      out.push({
        version,
        parent: (r.parent as string | null) ?? null,
        status: r.status as ReleaseStatus,
        created_at: r.created_at as string,
        activated_at: (r.activated_at as string | null) ?? null,
        dataset: { window_start: r.window_start as string, window_end: r.window_end as string, n_realized: Number(r.n_realized), dataset_hash: r.dataset_hash as string },
        evaluation: sealed?.evaluation ?? null,
        gates,
        gate_verdicts: verdicts,
        measured_at: (mine[0]?.measured_at as string | undefined) ?? null,
        checksum: r.checksum as string,
        body: JSON.parse(r.body as string) as ReleaseBody,
        families: sealed?.families ?? null,
      })
    }
    return out
  }

  /** Feed items, oldest first, optionally of one status. */
  async list(filter: { status?: ReleaseStatus | null } = {}): Promise<ReleaseFeedItem[]> {
    const status = filter.status ?? null
    const all = await this.items(status ? 'WHERE r.status = $s' : '', status ? { s: status } : {})
    return all.map(({ checksum: _c, body: _b, families: _f, ...item }) => item)
  }

  async detail(version: string): Promise<ReleaseDetail | null> {
    const [one] = await this.items('WHERE r.version = $v', { v: version })
    return one ?? null
  }

  async activeRelease(): Promise<ActiveRelease | null> {
    const [row] = await this.query("SELECT version FROM releases WHERE status = 'active'")
    if (!row) return null
    const rel = (await this.detail(row.version as string))!
    return { version: rel.version, activated_at: rel.activated_at!, delta_brier: rel.evaluation?.delta_brier ?? null, delta_brier_ci: rel.evaluation?.delta_brier_ci ?? null }
  }

  async ladderFacts(): Promise<LadderFacts> {
    const active = await this.activeRelease()
    const ever = await this.query('SELECT DISTINCT version FROM release_activations')
    let skill = 0
    for (const r of ever) {
      const rel = await this.detail(r.version as string)
      const c = rel?.evaluation?.delta_brier_ci
      if (c && c[1] < 0) skill = 1
    }
    return { active_release_major: active ? majorOf(active.version) : null, release_skill_ci_above_zero: skill }
  }
}
