-- Generated from the journal definitions (pipeline/records/*.ts) by `svc docs sql`; do not edit by hand.
-- Append-only: nothing in the code base updates or deletes a journal row; these are views over sealed Parquet only.

-- decision_rows: every record of the decisions journal as sealed (parquet/decisions/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW decision_rows AS
SELECT
  decision_id, question_id, asset, subject, event, horizon, timezone('UTC', horizon_end) AS horizon_end, timezone('UTC', created_at) AS created_at, conditions::JSON AS conditions, probability, confidence, decision, action, input_hash, state_hash, policy_version, jev_version, choice_id, choice_distribution::JSON AS choice_distribution, payment_id, payment_rail, matched_rules::JSON AS matched_rules, refusal_reason, model_id, fitted_version, policy_checksum, journal, record_version, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/decisions/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/decisions/**/*.parquet'));

-- decisions: one row per decision_id, the first recorded (one id always sits on one partition, so "first" is the lowest
-- offset). A later record with the same id can never replace it.
CREATE OR REPLACE VIEW decisions AS
SELECT *
FROM decision_rows
QUALIFY row_number() OVER (PARTITION BY decision_id ORDER BY log_partition, log_offset) = 1;

-- outcome_rows: every record of the outcomes journal as sealed (parquet/outcomes/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW outcome_rows AS
SELECT
  decision_id, question_id, asset, subject, outcome, timezone('UTC', resolved_at) AS resolved_at, timezone('UTC', horizon_end) AS horizon_end, statistic, statistic_detail::JSON AS statistic_detail, realized_choice, reason, record_version, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/outcomes/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/outcomes/**/*.parquet'));

-- outcomes: one row per decision_id, the first recorded (one id always sits on one partition, so "first" is the lowest
-- offset). A later record with the same id can never replace it.
CREATE OR REPLACE VIEW outcomes AS
SELECT *
FROM outcome_rows
QUALIFY row_number() OVER (PARTITION BY decision_id ORDER BY log_partition, log_offset) = 1;

-- billing_draw_rows: every record of the billing.draws journal as sealed (parquet/billing.draws/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW billing_draw_rows AS
SELECT
  id, payer, kind, amount, reason, ref, lot_id, timezone('UTC', created_at) AS created_at, timezone('UTC', expires_at) AS expires_at, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/billing.draws/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/billing.draws/**/*.parquet'));

-- funnel_snapshot_rows: every record of the ops.funnel journal as sealed (parquet/ops.funnel/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW funnel_snapshot_rows AS
SELECT
  snapshot_id, timezone('UTC', taken_at) AS taken_at, window_calls, xp_by_kind::JSON AS xp_by_kind, steps::JSON AS steps, activation::JSON AS activation, sources, record_version, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/ops.funnel/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/ops.funnel/**/*.parquet'));

-- funnel_snapshots: one row per snapshot_id, the first recorded (one id always sits on one partition, so "first" is the lowest
-- offset). A later record with the same id can never replace it.
CREATE OR REPLACE VIEW funnel_snapshots AS
SELECT *
FROM funnel_snapshot_rows
QUALIFY row_number() OVER (PARTITION BY snapshot_id ORDER BY log_partition, log_offset) = 1;
