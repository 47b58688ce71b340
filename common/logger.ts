/**
 * The one logger: pino, JSON lines on stderr (stdout stays free for data: tape import/generate are pipeable), or
 * pretty-printed when asked and stderr is a TTY. Library code takes a child of it; nothing writes to the console
 * directly.
 *
 * The command line configures it once, from the validated environment (LOG_LEVEL, LOG_FORMAT; app/config.ts), before
 * it loads the command that runs; library code never reads the environment. Unconfigured (library use, tests) it logs
 * warnings and errors only.
 */
import { pino, type Logger } from 'pino'

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

export interface LoggingOptions {
  level: LogLevel
  /** pretty: human-readable when stderr is a TTY (JSON otherwise); json: always JSON lines. */
  format: 'pretty' | 'json'
}

let options: LoggingOptions = { level: 'warn', format: 'json' }
let root: Logger | null = null

/** Sets level and format for every logger made from now on (call before the modules that log are loaded). */
export function configureLogging(o: LoggingOptions): void {
  options = o
  root = null
}

function rootLogger(): Logger {
  if (root) return root
  if (options.format === 'pretty' && process.stderr.isTTY) {
    root = pino({ level: options.level, transport: { target: 'pino-pretty', options: { destination: 2, colorize: true } } })
  } else {
    root = pino({ level: options.level }, pino.destination(2))
  }
  return root
}

export function childLogger(component: string): Logger {
  return rootLogger().child({ component })
}
