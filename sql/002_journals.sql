-- Generated from the journal definitions (pipeline/records/*.ts) by `svc docs sql`; do not edit by hand.
-- Append-only: nothing in the code base updates or deletes a journal row; these are views over sealed Parquet only.

-- decision_rows: every record of the decisions journal as sealed (parquet/decisions/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW decision_rows AS
SELECT
  decision_id, question_id, asset, subject, event, horizon, horizon_end, created_at, conditions, probability, confidence, decision, action, input_hash, state_hash, policy_version, jev_version, choice_id, choice_distribution, payment_id, payment_rail, matched_rules, refusal_reason, model_id, fitted_version, release_version, policy_checksum, journal, record_version, date, log_partition, log_offset
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
  decision_id, question_id, asset, subject, outcome, resolved_at, horizon_end, statistic, statistic_detail, realized_choice, reason, record_version, date, log_partition, log_offset
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
  id, payer, kind, amount, reason, ref, lot_id, created_at, expires_at, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/billing.draws/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/billing.draws/**/*.parquet'));

-- call_rows: every record of the duel.calls journal as sealed (parquet/duel.calls/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW call_rows AS
SELECT
  call_id, payer, decision_id, question_id, asset, subject, call, call_probability, house_probability, choice_id, locked_at, horizon_end, payment_id, payment_rail, record_version, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/duel.calls/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/duel.calls/**/*.parquet'));

-- calls: one row per call_id, the first recorded (one id always sits on one partition, so "first" is the lowest
-- offset). A later record with the same id can never replace it.
CREATE OR REPLACE VIEW calls AS
SELECT *
FROM call_rows
QUALIFY row_number() OVER (PARTITION BY call_id ORDER BY log_partition, log_offset) = 1;

-- call_opt_in_rows: every record of the duel.opt_ins journal as sealed (parquet/duel.opt_ins/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW call_opt_in_rows AS
SELECT
  id, payer, opt_in, recorded_at, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/duel.opt_ins/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/duel.opt_ins/**/*.parquet'));

-- arena_experience_rows: every record of the arena.experience journal as sealed (parquet/arena.experience/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW arena_experience_rows AS
SELECT
  id, payer, kind, xp, ref, level, created_at, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/arena.experience/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/arena.experience/**/*.parquet'));

-- arena_experience: one row per id, the first recorded (one id always sits on one partition, so "first" is the lowest
-- offset). A later record with the same id can never replace it.
CREATE OR REPLACE VIEW arena_experience AS
SELECT *
FROM arena_experience_rows
QUALIFY row_number() OVER (PARTITION BY id ORDER BY log_partition, log_offset) = 1;

-- arena_notification_rows: every record of the arena.notifications journal as sealed (parquet/arena.notifications/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW arena_notification_rows AS
SELECT
  key, payer, id, kind, ref, payload, created_at, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/arena.notifications/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/arena.notifications/**/*.parquet'));

-- arena_notifications: one row per key, the first recorded (one id always sits on one partition, so "first" is the lowest
-- offset). A later record with the same id can never replace it.
CREATE OR REPLACE VIEW arena_notifications AS
SELECT *
FROM arena_notification_rows
QUALIFY row_number() OVER (PARTITION BY key ORDER BY log_partition, log_offset) = 1;

-- arena_setting_rows: every record of the arena.settings journal as sealed (parquet/arena.settings/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW arena_setting_rows AS
SELECT
  id, payer, kind, value, preferences, ids, through, created_at, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/arena.settings/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/arena.settings/**/*.parquet'));

-- funnel_snapshot_rows: every record of the ops.funnel journal as sealed (parquet/ops.funnel/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW funnel_snapshot_rows AS
SELECT
  snapshot_id, taken_at, window_calls, xp_by_kind, steps, activation, sources, record_version, date, log_partition, log_offset
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

-- delivery_registration_rows: every record of the delivery.registrations journal as sealed (parquet/delivery.registrations/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW delivery_registration_rows AS
SELECT
  id, target_kind, target_id, payer, event, url, spec, payment_id, recorded_at, clock_at, record_version, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/delivery.registrations/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/delivery.registrations/**/*.parquet'));

-- delivery_ask_rows: every record of the delivery.asks journal as sealed (parquet/delivery.asks/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW delivery_ask_rows AS
SELECT
  decision_id, payer, payment_id, recorded_at, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/delivery.asks/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/delivery.asks/**/*.parquet'));

-- delivery_asks: one row per decision_id, the first recorded (one id always sits on one partition, so "first" is the lowest
-- offset). A later record with the same id can never replace it.
CREATE OR REPLACE VIEW delivery_asks AS
SELECT *
FROM delivery_ask_rows
QUALIFY row_number() OVER (PARTITION BY decision_id ORDER BY log_partition, log_offset) = 1;

-- delivery_attempt_rows: every record of the delivery.attempts journal as sealed (parquet/delivery.attempts/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW delivery_attempt_rows AS
SELECT
  id, delivery_id, attempt, target_kind, target_id, payer, channel, decision_id, status, final, http_status, latency_ms, error_class, event_at, attempted_at, record_version, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/delivery.attempts/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/delivery.attempts/**/*.parquet'));

-- delivery_attempts: one row per id, the first recorded (one id always sits on one partition, so "first" is the lowest
-- offset). A later record with the same id can never replace it.
CREATE OR REPLACE VIEW delivery_attempts AS
SELECT *
FROM delivery_attempt_rows
QUALIFY row_number() OVER (PARTITION BY id ORDER BY log_partition, log_offset) = 1;

-- delivery_contact_rows: every record of the delivery.contacts journal as sealed (parquet/delivery.contacts/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW delivery_contact_rows AS
SELECT
  contact_id, contact, contact_kind, consent, source, seat, recorded_at, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/delivery.contacts/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/delivery.contacts/**/*.parquet'));

-- delivery_contacts: one row per contact_id, the first recorded (one id always sits on one partition, so "first" is the lowest
-- offset). A later record with the same id can never replace it.
CREATE OR REPLACE VIEW delivery_contacts AS
SELECT *
FROM delivery_contact_rows
QUALIFY row_number() OVER (PARTITION BY contact_id ORDER BY log_partition, log_offset) = 1;

-- venue_gap_rows: every record of the venue.gaps journal as sealed (parquet/venue.gaps/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet).
CREATE OR REPLACE VIEW venue_gap_rows AS
SELECT
  gap_id, source, cause, span_start, span_end, bar_interval, bars_expected, bars_repaired, funding_expected, funding_repaired, missing, status, recorded_at, note, record_version, date, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/venue.gaps/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/venue.gaps/**/*.parquet'));

-- venue_gaps: one row per gap_id, the first recorded (one id always sits on one partition, so "first" is the lowest
-- offset). A later record with the same id can never replace it.
CREATE OR REPLACE VIEW venue_gaps AS
SELECT *
FROM venue_gap_rows
QUALIFY row_number() OVER (PARTITION BY gap_id ORDER BY log_partition, log_offset) = 1;
