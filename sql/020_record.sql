-- The measured record (spec, What the service does 7; Intelligence measures): the tables record/RecordJob.ts appends
-- (one sealed file per run that found new resolved outcomes; columns in sql/recordTables.ts) and the figures the API
-- serves, as views a quant can query. Every figure is a SUM over the increments, so these views read a few thousand
-- rows however long the ledger is. Bands are the calibration report's deciles, '(a,b]' (the first band is [0, 0.1]).
-- Types: the files carry the tables' one schema (instants TIMESTAMPTZ, JSON typed JSON); counts summed here are cast
-- back to BIGINT (sum() of BIGINT is HUGEINT, which readers outside DuckDB get as a 128-bit decimal).

CREATE OR REPLACE VIEW record_runs AS
SELECT * FROM read_parquet('${DATA_DIR}/parquet/record/runs/*.parquet', union_by_name = true);

-- A run commits by writing its record_runs row last: rows of any other table whose run has no record_runs row were
-- left by a crash mid-run and are not part of the record (the next run rewrites them under the same names).
CREATE OR REPLACE VIEW record_files AS
SELECT * FROM read_parquet('${DATA_DIR}/parquet/record/files/*.parquet', union_by_name = true)
WHERE run_id IN (SELECT run_id FROM record_runs);

CREATE OR REPLACE VIEW calibration_increments AS
SELECT * FROM read_parquet('${DATA_DIR}/parquet/record/calibration_increments/*.parquet', union_by_name = true)
WHERE run_id IN (SELECT run_id FROM record_runs);

-- Distribution questions (S01): one-vs-rest sums per class (sql/recordTables.ts, CLASS_INCREMENTS).
CREATE OR REPLACE VIEW class_increments AS
SELECT * FROM read_parquet('${DATA_DIR}/parquet/record/class_increments/*.parquet', union_by_name = true)
WHERE run_id IN (SELECT run_id FROM record_runs);

CREATE OR REPLACE VIEW label_increments AS
SELECT * FROM read_parquet('${DATA_DIR}/parquet/record/label_increments/*.parquet', union_by_name = true)
WHERE run_id IN (SELECT run_id FROM record_runs);

-- One snapshot per committed run (seq = run_id).
CREATE OR REPLACE VIEW intelligence_snapshots AS
SELECT * FROM read_parquet('${DATA_DIR}/parquet/record/intelligence_snapshots/*.parquet', union_by_name = true)
WHERE seq IN (SELECT run_id FROM record_runs);

CREATE OR REPLACE VIEW ladder_crossings AS
SELECT * FROM read_parquet('${DATA_DIR}/parquet/record/ladder_crossings/*.parquet', union_by_name = true);

-- calibration: per question (pooled over assets and subjects) and decile band. Floors (spec Limits): a question
-- publishes from 30 realized outcomes, a band from 10; below them the band reports its count with published = false.
CREATE OR REPLACE VIEW calibration AS
WITH bands AS (
  SELECT question_id, bucket, sum(n)::BIGINT AS n, sum(sum_p) AS sum_p, sum(sum_y) AS sum_y
  FROM calibration_increments WHERE bucket IS NOT NULL
  GROUP BY question_id, bucket
)
SELECT
  question_id,
  bucket,
  bucket / 10 AS lo,
  (bucket + 1) / 10 AS hi,
  n,
  sum_p / n AS mean_predicted,
  sum_y / n AS realized_frequency,
  (sum(n) OVER (PARTITION BY question_id))::BIGINT AS question_n,
  (sum(n) OVER (PARTITION BY question_id) >= 30 AND n >= 10) AS published
FROM bands;

-- calibration_by_class: a distribution question's one-vs-rest reliability per class (p = the class's probability,
-- realized_frequency = the share of the band's decisions whose realized class it is), with the same floors per class.
-- The calibration view above grades its modal (chosen) class, the secondary view.
CREATE OR REPLACE VIEW calibration_by_class AS
WITH bands AS (
  SELECT question_id, class, bucket, sum(n)::BIGINT AS n, sum(sum_p) AS sum_p, sum(sum_y) AS sum_y
  FROM class_increments
  GROUP BY question_id, class, bucket
)
SELECT
  question_id, class, bucket, bucket / 10 AS lo, (bucket + 1) / 10 AS hi, n,
  sum_p / n AS mean_predicted, sum_y / n AS realized_frequency,
  (sum(n) OVER (PARTITION BY question_id, class))::BIGINT AS question_n,
  (sum(n) OVER (PARTITION BY question_id, class) >= 30 AND n >= 10) AS published
FROM bands;

-- distribution_brier: a distribution question's multi-class Brier Σ_k (p_k − o_k)² and log loss −ln p(realized) per
-- decision, averaged over its realized decisions (n: the largest class count; every class counts every decision).
CREATE OR REPLACE VIEW distribution_brier AS
WITH c AS (
  SELECT question_id, class, sum(n)::BIGINT AS n, sum(sum_sq) AS sum_sq, sum(sum_ll) AS sum_ll FROM class_increments GROUP BY ALL
)
SELECT question_id, max(n) AS n, sum(sum_sq) / max(n) AS brier, sum(sum_ll) / max(n) AS logloss
FROM c GROUP BY question_id;

-- calibration_by_subject: the same per question and subject (an asset, or a wallet for the account questions).
CREATE OR REPLACE VIEW calibration_by_subject AS
WITH bands AS (
  SELECT question_id, coalesce(subject, asset) AS subject, bucket, sum(n)::BIGINT AS n, sum(sum_p) AS sum_p, sum(sum_y) AS sum_y
  FROM calibration_increments WHERE bucket IS NOT NULL
  GROUP BY ALL
)
SELECT
  question_id, subject, bucket, bucket / 10 AS lo, (bucket + 1) / 10 AS hi, n,
  sum_p / n AS mean_predicted, sum_y / n AS realized_frequency,
  (sum(n) OVER (PARTITION BY question_id, subject))::BIGINT AS question_n,
  (sum(n) OVER (PARTITION BY question_id, subject) >= 30 AND n >= 10) AS published
FROM bands;

-- priors: per question the pooled base rate of realized claims with its Wilson 95 % interval (z = 1.959963984540054);
-- published from 30 realized outcomes. Choice questions (S01) also have label_histogram.
CREATE OR REPLACE VIEW priors AS
WITH q AS (
  SELECT question_id, sum(n)::BIGINT AS n, sum(sum_y) AS successes, min(first_resolved) AS window_start, max(last_resolved) AS window_end
  FROM calibration_increments WHERE bucket IS NOT NULL
  GROUP BY question_id
), w AS (
  SELECT *, successes / n AS rate, 1.959963984540054 AS z FROM q
)
SELECT
  question_id, n, successes::BIGINT AS successes, rate,
  CASE WHEN successes = 0 THEN 0 ELSE greatest(0, least(1,
    (rate + z * z / (2 * n)) / (1 + z * z / n) - z * sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n))) END AS wilson_lower,
  CASE WHEN successes = n THEN 1 ELSE greatest(0, least(1,
    (rate + z * z / (2 * n)) / (1 + z * z / n) + z * sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n))) END AS wilson_upper,
  CASE WHEN n >= 30 THEN 'published' ELSE 'insufficient_sample' END AS verdict,
  window_start, window_end
FROM w;

CREATE OR REPLACE VIEW label_histogram AS
SELECT question_id, label, sum(n)::BIGINT AS n FROM label_increments GROUP BY ALL;

-- curve_points: one point per snapshot (spec, Curve), in the order taken.
CREATE OR REPLACE VIEW curve_points AS
SELECT seq, n_realized AS n_cum, brier, logloss, ece, json_extract_string(active_release, '$.version') AS release, taken_at, index_version
FROM intelligence_snapshots
ORDER BY seq;
