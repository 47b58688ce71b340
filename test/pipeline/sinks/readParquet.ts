/** Reads the sink's Parquet tree back with a throwaway in-memory DuckDB (as a quant would, without the catalog). */
import { DuckDBInstance } from '@duckdb/node-api'

export async function queryParquet(sql: string): Promise<Record<string, unknown>[]> {
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  try {
    return (await connection.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[]
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}

export function ticksGlob(dataDir: string): string {
  return `read_parquet('${dataDir}/parquet/venue.ticks/**/*.parquet', hive_partitioning = true, union_by_name = true, hive_types = {'date': DATE, 'asset': VARCHAR})`
}
