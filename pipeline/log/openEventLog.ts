/**
 * Opens the event log a deployment chose (app/config.ts maps SVC_LOG, SVC_DATA_DIR and KAFKA_* onto these options):
 * the embedded file log in one directory (one process, durable files; the default), or Apache Kafka.
 */
import { EmbeddedLog, type EmbeddedLogOptions } from './EmbeddedLog.ts'
import type { EventLog } from './EventLog.ts'
import type { KafkaLogOptions } from './KafkaLog.ts'

export type OpenEventLogOptions =
  | { kind: 'embedded'; dir: string; embedded?: EmbeddedLogOptions }
  | { kind: 'kafka'; kafka: KafkaLogOptions }

export async function openEventLog(options: OpenEventLogOptions): Promise<EventLog> {
  // kafkajs is loaded only by a deployment on Kafka: the embedded log's start-up does not pay for it (bench/startup.ts).
  if (options.kind === 'kafka') return (await import('./KafkaLog.ts')).KafkaLog.connect(options.kafka)
  return EmbeddedLog.open(options.dir, options.embedded ?? {})
}
