/** Routes kafkajs' own logging to pino (component "kafkajs"), at a level derived from the pino logger's. */
import { logLevel, type logCreator } from 'kafkajs'
import type { Logger } from 'pino'

/**
 * kafkajs' message for CONCURRENT_TRANSACTIONS, which the coordinator answers to a transaction begun right after a
 * commit until it has written that commit's markers: routine for back-to-back transactions (KafkaUnitWriter), retried
 * by kafkajs, and logged by it at ERROR each time.
 */
const CONCURRENT_TRANSACTIONS = 'another concurrent operation on the same transaction was ongoing'

export function kafkaLogLevel(logger: Logger): logLevel {
  switch (logger.level) {
    case 'trace':
      return logLevel.DEBUG
    case 'debug':
      return logLevel.INFO
    case 'error':
    case 'fatal':
      return logLevel.ERROR
    case 'silent':
      return logLevel.NOTHING
    default:
      return logLevel.WARN
  }
}

export function pinoLogCreator(logger: Logger): logCreator {
  return () =>
    ({ namespace, level, log }) => {
      const { message, timestamp: _timestamp, ...extra } = log
      const fields = { namespace, ...extra }
      // kafkajs logs every error response of the wire protocol (coordinator loading, leader moving, ...) at ERROR
      // and then retries it; failures that matter surface as rejected calls, so those are warnings here.
      if (`${message} ${String((extra as { error?: unknown }).error ?? '')}`.includes(CONCURRENT_TRANSACTIONS)) logger.debug(fields, message)
      else if (level === logLevel.ERROR && namespace === 'Connection') logger.warn(fields, message)
      else if (level === logLevel.ERROR) logger.error(fields, message)
      else if (level === logLevel.WARN) logger.warn(fields, message)
      else if (level === logLevel.INFO) logger.info(fields, message)
      else logger.debug(fields, message)
    }
}
