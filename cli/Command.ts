import { codedError } from '../common/CodedError.ts'

/** A `svc` subcommand. Each file in cli/commands/ exports `command` (or `commands`) of this shape. */
export interface Command {
  /** Words after `svc`, e.g. 'tape import'. */
  name: string
  summary: string
  /** Usage text shown by `svc <name> --help`. */
  usage: string
  /** Returns the process exit code. */
  run(argv: string[]): Promise<number>
}

/** A usage error: printed with the command's usage, exit code 2. */
export class UsageError extends codedError({
  USAGE: { retryable: false, meaning: 'bad or missing arguments: printed with the command usage, exit code 2' },
}) {
  constructor(message: string) {
    super('USAGE', message)
  }
}

/**
 * A numeric flag: `fallback` when absent, else the number, which must pass `check` (described by `want` in the error,
 * e.g. 'a number > 0'). Blank and non-numeric values are usage errors naming the flag.
 */
export function numberFlag(name: string, raw: string | undefined, fallback: number, check: (n: number) => boolean, want: string): number {
  if (raw === undefined) return fallback
  const n = Number(raw)
  if (raw.trim() === '' || !Number.isFinite(n) || !check(n)) throw new UsageError(`--${name} must be ${want}, got '${raw}'`)
  return n
}

/** numberFlag for a lower bound only: 'a number >= min'. */
export function numberAtLeast(name: string, raw: string | undefined, fallback: number, min: number): number {
  return numberFlag(name, raw, fallback, (n) => n >= min, `a number >= ${min}`)
}
