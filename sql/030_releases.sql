-- Sealed releases and their promotion gates (spec: Intelligence measures, release feed item; States: Release; the
-- promotion gates). Files: record/releases/ReleaseStore.ts writes them, each once (columns in sql/releaseTables.ts).
-- Nothing is stored as a status: candidate, active, superseded and rejected are derived here from the rows.

CREATE OR REPLACE VIEW release_rows AS
SELECT * FROM read_parquet('${DATA_DIR}/parquet/record/releases/*.parquet', union_by_name = true);

CREATE OR REPLACE VIEW release_gates AS
SELECT version, gate, met, measured, reason, measured_at, evaluation_id
FROM read_parquet('${DATA_DIR}/parquet/record/release_gates/*.parquet', union_by_name = true);

-- One evaluation per evaluated release (its four gate rows carry the same evaluation).
CREATE OR REPLACE VIEW release_evaluations AS
SELECT DISTINCT version, evaluation_id, measured_at, evaluation
FROM read_parquet('${DATA_DIR}/parquet/record/release_gates/*.parquet', union_by_name = true);

CREATE OR REPLACE VIEW release_activations AS
SELECT * FROM read_parquet('${DATA_DIR}/parquet/record/release_activations/*.parquet', union_by_name = true)
ORDER BY seq;

-- The status of every release, derived at read time: active = the version of the latest activation; superseded = was
-- activated once and is not the latest; rejected = a sealed gate failed; candidate = none of these.
CREATE OR REPLACE VIEW releases AS
WITH latest AS (SELECT version FROM release_activations ORDER BY seq DESC LIMIT 1),
activated AS (SELECT version, max(activated_at) AS activated_at FROM release_activations GROUP BY version),
failed AS (SELECT DISTINCT version FROM release_gates WHERE NOT met)
SELECT r.version, r.parent,
       CASE WHEN r.version IN (SELECT version FROM latest) THEN 'active'
            WHEN r.version IN (SELECT version FROM activated) THEN 'superseded'
            WHEN r.version IN (SELECT version FROM failed) THEN 'rejected'
            ELSE 'candidate' END AS status,
       r.created_at, a.activated_at, r.checksum, r.jev_version, r.dataset_hash, r.window_start, r.window_end,
       r.n_realized
FROM release_rows r
LEFT JOIN activated a USING (version)
ORDER BY r.created_at, r.version;
