-- Ticks: every venue event the Parquet sink sealed from the ticks topic (pipeline/sinks/ticksTable.ts).
-- ${DATA_DIR} is the service's data directory; sql/Catalog.ts substitutes it, and sql/README.md shows how to do
-- it by hand for the duckdb CLI. Views only: the catalog file stores no data.
--
-- Types come from the files (one schema: ticksTable.ts): instants are TIMESTAMPTZ (Parquet isAdjustedToUTC, so the
-- session's TimeZone changes how they print, never which instant they are), `payload` is JSON (the Parquet JSON type).
--
-- Storage: ${DATA_DIR}/parquet/venue.ticks/date=YYYY-MM-DD/asset=<ASSET>/p<partition>-<first>-<last>.parquet.
-- `date` (UTC day of the event time) and `asset` ('*' for venue-wide records) come from the directory names.
-- A zero-row schema anchor under date=1970-01-01 keeps these views answering on an empty data dir. Files a compaction
-- merged and has not deleted yet are skipped (covered_parquet, sql/000_sealed_files.sql).

CREATE OR REPLACE VIEW ticks AS
SELECT
  ts, date, asset, kind, instrument, source, provider, quality, received_at,
  "interval", open_time, open, high, low, close, volume, volume_unit,
  price, rate, interval_hours, premium, next_funding_at, oi, oi_unit,
  bid, ask, bid_size, ask_size, bid_depth_usd, ask_depth_usd,
  side, size, notional_usd, trade_id, payload,
  tape_seq, tape_id, log_partition, log_offset
FROM read_parquet(
  '${DATA_DIR}/parquet/venue.ticks/**/*.parquet',
  hive_partitioning = true,
  union_by_name = true,
  hive_types = {'date': DATE, 'asset': VARCHAR},
  filename = true
)
WHERE filename NOT IN (SELECT file FROM covered_parquet('${DATA_DIR}/parquet/venue.ticks/**/*.parquet'));

-- OHLCV bars. `ts` is the bar close (when the bar became knowable), `open_time` its start. A source may deliver
-- the same bar twice (a 'degraded' possibly-unfinished bar, then the final one): keep one per bar, preferring
-- non-degraded, then the latest received.
CREATE OR REPLACE VIEW bars AS
SELECT ts, open_time, date, asset, instrument, source, provider, quality, "interval",
       open, high, low, close, volume, volume_unit, received_at
FROM ticks
WHERE kind = 'bar'
QUALIFY row_number() OVER (
  PARTITION BY source, asset, instrument, "interval", open_time
  ORDER BY (quality = 'degraded'), received_at DESC, log_offset DESC
) = 1;

-- Funding settlements: `rate` is a fraction per `interval_hours`.
CREATE OR REPLACE VIEW funding AS
SELECT ts, date, asset, instrument, source, provider, quality, rate, interval_hours, premium,
       rate * (24.0 / interval_hours) * 365.0 AS rate_annualized
FROM ticks
WHERE kind = 'funding';

-- The venue's running estimate of the next settlement.
CREATE OR REPLACE VIEW predicted_funding AS
SELECT ts, date, asset, instrument, source, provider, quality, rate, interval_hours, next_funding_at
FROM ticks
WHERE kind = 'predicted_funding';

CREATE OR REPLACE VIEW mids AS
SELECT ts, date, asset, instrument, source, provider, quality, price
FROM ticks
WHERE kind = 'mid';

CREATE OR REPLACE VIEW marks AS
SELECT ts, date, asset, instrument, source, provider, quality, price
FROM ticks
WHERE kind = 'mark';

-- Index (oracle) prices; named index_prices because INDEX is an SQL keyword.
CREATE OR REPLACE VIEW index_prices AS
SELECT ts, date, asset, instrument, source, provider, quality, price
FROM ticks
WHERE kind = 'index';

CREATE OR REPLACE VIEW book_top AS
SELECT ts, date, asset, instrument, source, provider, quality,
       bid, ask, bid_size, ask_size, bid_depth_usd, ask_depth_usd,
       (bid + ask) / 2 AS mid,
       CASE WHEN bid + ask > 0 THEN (ask - bid) / ((bid + ask) / 2) * 1e4 END AS spread_bps
FROM ticks
WHERE kind = 'book_top';

CREATE OR REPLACE VIEW open_interest AS
SELECT ts, date, asset, instrument, source, provider, quality, oi AS value, oi_unit AS unit
FROM ticks
WHERE kind = 'open_interest';

-- `side` is the side of the liquidated position.
CREATE OR REPLACE VIEW liquidations AS
SELECT ts, date, asset, instrument, source, provider, quality, side, price, size, notional_usd
FROM ticks
WHERE kind = 'liquidation';

CREATE OR REPLACE VIEW trades AS
SELECT ts, date, asset, instrument, source, provider, quality, side, price, size, trade_id
FROM ticks
WHERE kind = 'trade';

-- Venue-wide snapshots; `payload` is JSON {"assets": [...]} (query it with DuckDB's JSON functions).
CREATE OR REPLACE VIEW universe AS
SELECT ts, date, instrument, source, provider, quality, payload
FROM ticks
WHERE kind = 'universe';

-- Hourly OHLCV per asset and source, rolled up from bars whose interval divides an hour (1m..1h). Bars are
-- bucketed by open_time, so an hour holds exactly the bars that opened in it; `bars` counts them (60 for a
-- complete hour of 1m bars). Volume keeps the source's unit.
CREATE OR REPLACE VIEW hourly_ohlc AS
SELECT
  time_bucket(INTERVAL 1 HOUR, open_time, 'UTC') AS hour,
  asset, source, instrument, "interval" AS source_interval, volume_unit,
  arg_min(open, open_time) AS open,
  max(high) AS high,
  min(low) AS low,
  arg_max(close, open_time) AS close,
  sum(volume) AS volume,
  count(*) AS bars
FROM bars
WHERE "interval" IN ('1m', '3m', '5m', '15m', '30m', '1h')
GROUP BY ALL;

-- The newest record of each kind per asset and source: "what do we know right now".
CREATE OR REPLACE VIEW latest_by_asset_kind AS
SELECT *
FROM ticks
QUALIFY row_number() OVER (PARTITION BY asset, kind, source ORDER BY ts DESC, received_at DESC, log_offset DESC) = 1;
