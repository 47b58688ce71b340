/**
 * The one logger: pino, JSON lines by default, pretty-printed when stderr is a TTY.
 * Library code takes a child of this logger; nothing writes to the console directly.
 */
import { pino, type Logger } from 'pino'

function build(): Logger {
  const level = process.env.LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'warn' : 'info')
  // Logs go to stderr so commands that write data to stdout (tape import/generate) stay pipeable.
  if (process.stderr.isTTY && process.env.LOG_FORMAT !== 'json') {
    return pino({ level, transport: { target: 'pino-pretty', options: { destination: 2, colorize: true } } })
  }
  return pino({ level }, pino.destination(2))
}

export const logger: Logger = build()

export function childLogger(component: string): Logger {
  return logger.child({ component })
}
