-- The decision ledger (pipeline/sinks/decisionsTable.ts, pipeline/records/decisionRecord.ts). Append-only: nothing
-- in the code base updates or deletes a ledger row; these are views over sealed Parquet files only.
--
-- Storage: ${DATA_DIR}/parquet/decisions/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet,
-- `date` = UTC day of created_at (event time).

-- Every record the decisions topic ever carried, as sealed.
CREATE OR REPLACE VIEW decision_rows AS
SELECT
  decision_id, question_id, asset, subject, event, horizon, horizon_end, created_at, conditions,
  probability, confidence, decision, action, input_hash, state_hash, policy_version, jev_version,
  choice_id, choice_distribution, payment_id, payment_rail, matched_rules, refusal_reason,
  model_id, fitted_version, policy_checksum, journal, record_version, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/decisions/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR}
);

-- The ledger: one row per decision_id, the first recorded (one id always sits on one partition, because the key
-- question_id|asset|subject is part of the id, so "first" is the lowest offset). A later record with the same id
-- can never replace it.
CREATE OR REPLACE VIEW decisions AS
SELECT *
FROM decision_rows
QUALIFY row_number() OVER (PARTITION BY decision_id ORDER BY log_partition, log_offset) = 1;
