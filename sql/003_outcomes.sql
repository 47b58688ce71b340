-- Outcomes written by the resolution engine (pipeline/sinks/outcomesTable.ts, pipeline/records/outcomeRecord.ts).
-- Storage: ${DATA_DIR}/parquet/outcomes/date=YYYY-MM-DD/asset=<ASSET>/..., `date` = UTC day of resolved_at.

CREATE OR REPLACE VIEW outcome_rows AS
SELECT
  decision_id, question_id, asset, subject, outcome, resolved_at, horizon_end, statistic, statistic_detail,
  realized_choice, reason, record_version, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/outcomes/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR}
);

-- One outcome per decision: the first written (the key is the decision_id, so "first" is the lowest offset).
CREATE OR REPLACE VIEW outcomes AS
SELECT *
FROM outcome_rows
QUALIFY row_number() OVER (PARTITION BY decision_id ORDER BY log_partition, log_offset) = 1;
