/**
 * The command line's one reading of the environment: process.env validated against the configuration schema
 * (app/config.ts), with the command's flags in place of the variables they override.
 */
import { loadConfig, progressFromEnv, type AppConfig } from '../app/config.ts'
import type { ProgressOptions } from '../common/progress.ts'
import { restrictUmask } from '../pipeline/log/dataModes.ts'

export function environment(overrides: Partial<Record<keyof AppConfig, string | undefined>> = {}): AppConfig {
  const env: Record<string, string | undefined> = { ...process.env }
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) env[k] = v
  // The commands that read the environment (start, pipeline run, record, release, compact) write the data folder, where
  // the files DuckDB creates itself must be private too (pipeline/log/dataModes.ts).
  restrictUmask()
  return loadConfig(env)
}

/** How long jobs report progress (SVC_PROGRESS_MS, CI). */
export function progressSettings(): ProgressOptions {
  return progressFromEnv(process.env)
}
