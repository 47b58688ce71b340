/**
 * The intelligence snapshot's hash chain and its row form.
 *
 * Spec, Intelligence measures: a snapshot carries prev_hash and row_hash; GET /v1/intelligence publishes
 * chain_verified beside it. row_hash = SHA-256 (hex) of the JCS (RFC 8785) of the snapshot without row_hash, so it
 * covers prev_hash and, through it, every earlier snapshot; the first snapshot's prev_hash is null. Verification
 * recomputes every row's hash from the row as stored (each published field is its own column, so the hash covers what
 * the API serves) and checks each prev_hash against the row before it.
 */
import { jcsSha256 } from '../common/hash.ts'
import type { IntelligenceSnapshot } from './schemas.ts'

export type { IntelligenceSnapshot } from './schemas.ts'

export function snapshotRowHash(body: Omit<IntelligenceSnapshot, 'row_hash'>): string {
  return jcsSha256(body)
}

function numOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v)
}

function strOrNull(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v)
}

/** A row of intelligence_snapshots (JSON-safe: BIGINT as strings) back into the snapshot it stores. */
export function snapshotOfRow(r: Record<string, unknown>): IntelligenceSnapshot {
  return {
    seq: Number(r.seq),
    index_version: String(r.index_version),
    composite: numOrNull(r.composite),
    insufficient_note: strOrNull(r.insufficient_note),
    components: {
      brier: numOrNull(r.brier),
      logloss: numOrNull(r.logloss),
      skill_vs_reference: numOrNull(r.skill_vs_reference),
      reliability: numOrNull(r.reliability),
      resolution: numOrNull(r.resolution),
      uncertainty: numOrNull(r.uncertainty),
      ece: numOrNull(r.ece),
      resolution_rate: numOrNull(r.resolution_rate),
    },
    evidence: {
      n_decisions: Number(r.n_decisions),
      n_realized: Number(r.n_realized),
      n_unresolvable: Number(r.n_unresolvable),
      n_refused: Number(r.n_refused),
      window_start: strOrNull(r.window_start),
      window_end: strOrNull(r.window_end),
    },
    benchmarks: {
      reference_brier: numOrNull(r.reference_brier),
      ...(r.crowd_n === null || r.crowd_n === undefined
        ? {}
        : { crowd: { brier: Number(r.crowd_brier), n: Number(r.crowd_n), ...(r.crowd_house_brier === null || r.crowd_house_brier === undefined ? {} : { house_brier: Number(r.crowd_house_brier) }) } }),
    },
    ...(r.modal_n === null || r.modal_n === undefined
      ? {}
      : { modal_class: { n: Number(r.modal_n), brier: numOrNull(r.modal_brier), logloss: numOrNull(r.modal_logloss), skill_vs_reference: numOrNull(r.modal_skill_vs_reference), ece: numOrNull(r.modal_ece) } }),
    active_release: r.active_release === null || r.active_release === undefined ? null : JSON.parse(String(r.active_release)),
    release_delta: numOrNull(r.release_delta),
    published_bands: Number(r.published_bands),
    rung: Number(r.rung),
    taken_at: String(r.taken_at),
    prev_hash: strOrNull(r.prev_hash),
    row_hash: String(r.row_hash),
  }
}

/** True when every snapshot's row_hash recomputes and links to the one before it (in seq order). Empty: true. */
export function chainVerified(snapshots: readonly IntelligenceSnapshot[]): boolean {
  let prev: string | null = null
  let seq = 0
  for (const s of snapshots) {
    if (s.seq <= seq) return false
    if (s.prev_hash !== prev) return false
    const { row_hash, ...body } = s
    if (snapshotRowHash(body) !== row_hash) return false
    prev = row_hash
    seq = s.seq
  }
  return true
}
