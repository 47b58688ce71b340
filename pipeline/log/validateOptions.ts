/**
 * The log layer's options validator: common/validation.ts's, failing with LogError LOG_CONFIG. Only
 * pipeline/log/openEventLog.ts imports it (pending the configuration rewrite, which moves it onto common/ directly);
 * EmbeddedLog and KafkaLog use common/validation.ts themselves.
 */
import { optionsValidator as validator } from '../../common/validation.ts'
import { LogError } from './LogError.ts'

export function optionsValidator<T>(schema: object, root: string): (value: unknown) => T {
  return validator<T>(schema, root, LogError.config)
}
