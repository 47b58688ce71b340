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
