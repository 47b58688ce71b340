/**
 * The one logger: pino, JSON lines on stderr (stdout stays free for data: tape import/generate are pipeable), or
 * pretty-printed, one line per record, when asked and stderr is a TTY. Library code takes a child of it; nothing writes to the console
 * directly.
 *
 * The command line configures it once, from the validated environment (LOG_LEVEL, LOG_FORMAT; app/config.ts), before
 * it loads the command that runs; library code never reads the environment. Unconfigured (library use, tests) it logs
 * warnings and errors only.
 */
import { pino, type Logger } from 'pino'
import { prettyFactory } from 'pino-pretty'

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

/** Keys every line has, shown in the prefix (or not at all), never again in its fields. */
const PREFIX_KEYS = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'component'])

/** A field's value on a terminal line: bare when it reads unambiguously, else as JSON (quoted, escaped). */
function fieldText(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v)
  return typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)
}

/**
 * One line per record on a terminal (issue 33 item 7: pino-pretty's default put each field on its own line, 8 lines
 * per request of the access log): `HH:MM:ss.l LEVEL component: msg key=value …`. An error's stack, the one thing
 * that needs lines, follows on its own lines. The JSON off a terminal is untouched.
 */
export function terminalLine(log: Record<string, unknown>, messageKey: string): string {
  const fields: string[] = []
  let stack = ''
  for (const [k, v] of Object.entries(log)) {
    if (PREFIX_KEYS.has(k) || k === messageKey) continue
    const err = v as { message?: unknown; stack?: unknown } | null
    if (k === 'err' && err && typeof err === 'object' && typeof err.message === 'string') {
      fields.push(`err=${fieldText(err.message)}`)
      if (typeof err.stack === 'string') stack = `\n    ${err.stack.split('\n').slice(1).map((l) => l.trim()).join('\n    ')}`
      continue
    }
    fields.push(`${k}=${fieldText(v)}`)
  }
  const component = typeof log.component === 'string' ? `${log.component}: ` : ''
  return `${component}${String(log[messageKey] ?? '')}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}${stack}`
}

function rootLogger(): Logger {
  if (root) return root
  if (options.format === 'pretty' && process.stderr.isTTY) {
    // In this thread (not a transport worker), so the line format can be a function.
    const prettify = prettyFactory({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', hideObject: true, singleLine: true, messageFormat: terminalLine })
    root = pino({ level: options.level }, { write: (line: string) => void process.stderr.write(`${prettify(line)}\n`) })
  } else {
    root = pino({ level: options.level }, pino.destination(2))
  }
  return root
}

export function childLogger(component: string): Logger {
  return rootLogger().child({ component })
}
