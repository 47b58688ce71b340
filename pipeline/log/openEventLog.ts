/**
 * Opens the configured event log:
 *   SVC_LOG=embedded|kafka     default embedded (one process, durable files)
 *   SVC_DATA_DIR               embedded log directory is $SVC_DATA_DIR/log (default ./data)
 *   KAFKA_BROKERS              comma-separated host:port list (required for kafka)
 *   KAFKA_CLIENT_ID            default decision-intelligence-service
 *   KAFKA_TOPIC_PREFIX         optional prefix of every topic and group on the broker
 *   KAFKA_REPLICATION_FACTOR   replication factor of created topics, default 1
 */
import { join, resolve } from 'node:path'
import type { JSONSchemaType } from 'ajv'
import { EmbeddedLog } from './EmbeddedLog.ts'
import type { EventLog } from './EventLog.ts'
import { KafkaLog } from './KafkaLog.ts'
import { optionsValidator } from './validateOptions.ts'

export interface EventLogConfig {
  SVC_LOG: 'embedded' | 'kafka'
  SVC_DATA_DIR: string
  KAFKA_BROKERS?: string
  KAFKA_CLIENT_ID: string
  KAFKA_TOPIC_PREFIX: string
  KAFKA_REPLICATION_FACTOR: string
}

const validateConfig = optionsValidator<EventLogConfig>(
  {
    type: 'object',
    required: ['SVC_LOG', 'SVC_DATA_DIR', 'KAFKA_CLIENT_ID', 'KAFKA_TOPIC_PREFIX', 'KAFKA_REPLICATION_FACTOR'],
    properties: {
      SVC_LOG: { type: 'string', enum: ['embedded', 'kafka'], default: 'embedded' },
      SVC_DATA_DIR: { type: 'string', minLength: 1, default: 'data' },
      KAFKA_BROKERS: { type: 'string', pattern: '^\\s*[^\\s:,]+:[0-9]{1,5}\\s*(,\\s*[^\\s:,]+:[0-9]{1,5}\\s*)*$', nullable: true },
      KAFKA_CLIENT_ID: { type: 'string', minLength: 1, default: 'decision-intelligence-service' },
      KAFKA_TOPIC_PREFIX: { type: 'string', pattern: '^[a-zA-Z0-9._-]*$', default: '' },
      KAFKA_REPLICATION_FACTOR: { type: 'string', pattern: '^[1-9][0-9]?$', default: '1' },
    },
    if: { required: ['SVC_LOG'], properties: { SVC_LOG: { const: 'kafka' } } },
    then: { required: ['KAFKA_BROKERS'] },
  } as unknown as JSONSchemaType<EventLogConfig>,
  'event log config',
)

const KEYS = ['SVC_LOG', 'SVC_DATA_DIR', 'KAFKA_BROKERS', 'KAFKA_CLIENT_ID', 'KAFKA_TOPIC_PREFIX', 'KAFKA_REPLICATION_FACTOR'] as const

/** The validated config from the environment (empty variables count as unset). Throws LOG_CONFIG naming the field. */
export function eventLogConfig(env: NodeJS.ProcessEnv = process.env): EventLogConfig {
  const picked: Record<string, string> = {}
  for (const key of KEYS) {
    const value = env[key]
    if (value !== undefined && value !== '') picked[key] = value
  }
  return validateConfig(picked)
}

export async function openEventLog(env: NodeJS.ProcessEnv = process.env): Promise<EventLog> {
  const config = eventLogConfig(env)
  if (config.SVC_LOG === 'kafka') {
    return KafkaLog.connect({
      brokers: config.KAFKA_BROKERS!.split(',').map((b) => b.trim()),
      clientId: config.KAFKA_CLIENT_ID,
      topicPrefix: config.KAFKA_TOPIC_PREFIX,
      replicationFactor: Number(config.KAFKA_REPLICATION_FACTOR),
    })
  }
  return EmbeddedLog.open(join(resolve(config.SVC_DATA_DIR), 'log'))
}
