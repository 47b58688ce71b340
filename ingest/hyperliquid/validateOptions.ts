/**
 * `<label> options/<path>: <message>` on common/validation.ts. Only app/walletWiring.ts and app/openMarketServices.ts
 * import it (pending the configuration rewrite, which moves them onto common/ directly); the adapter's own clients
 * use common/validation.ts themselves.
 */
import { validateOptions as validate } from '../../common/validation.ts'

export function validateOptions<T>(label: string, schema: object, value: unknown): T {
  return validate<T>(`${label} options`, schema, value)
}
