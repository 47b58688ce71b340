-- Sealed files a reader must skip. Compaction (pipeline/sinks/ParquetCompactor.ts) merges a run of small files of one
-- directory and log partition into one file named by the run's first and last offsets, renames it into place, then
-- deletes the small files. Until they are gone (a moment, or until the next compaction after a crash) both are on
-- disk: a file whose offset range lies inside another's of the same directory and partition is covered, its rows are
-- already in the merged file, and every view over sink Parquet leaves it out:
--   FROM read_parquet('<root>/**/*.parquet', ..., filename = true)
--   WHERE filename NOT IN (SELECT file FROM covered_parquet('<root>/**/*.parquet'))
-- Names: p<partition>-<first>-<last>.parquet (pipeline/sinks/parquetLayout.ts); other files (the schema anchor) never
-- cover and are never covered. Files by first offset, the wider first at a tie: covered when an earlier one reaches as far.
CREATE OR REPLACE MACRO covered_parquet(pattern) AS TABLE
WITH named AS (
  SELECT file, parse_dirpath(file) AS dir,
         regexp_extract(parse_filename(file), '^p(\d+)-(\d{12,})-(\d{12,})\.parquet$', ['p', 'first', 'last']) AS m
  FROM glob(pattern)
), sealed AS (
  SELECT file, dir, m.p::INTEGER AS p, m.first::BIGINT AS first_offset, m.last::BIGINT AS last_offset
  FROM named
  WHERE m.p <> ''
), reach AS (
  SELECT file, last_offset,
         max(last_offset) OVER (PARTITION BY dir, p ORDER BY first_offset, last_offset DESC
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS earlier_reach
  FROM sealed
)
SELECT file FROM reach WHERE earlier_reach >= last_offset;
