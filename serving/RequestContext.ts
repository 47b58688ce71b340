/**
 * The HandlerContext of one request. A class so that need() lives on the prototype: no closure per request.
 */
import type { StaticDocuments } from './docs/StaticDocuments.ts'
import type { PaidCall } from '../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../pipeline/journal/UnitOfWork.ts'
import type { Price } from '../product/billing/pricing.ts'
import type { HandlerContext } from './routes/types.ts'
import type { ServicePart, Services } from './Services.ts'
import { ServiceError } from '../common/ServiceError.ts'

export class RequestContext implements HandlerContext {
  payment: PaidCall | null = null
  unit: UnitOfWork | null = null
  price: Price | null = null
  paymentRef?: string

  constructor(
    readonly request_id: string,
    readonly now: number,
    readonly method: string,
    readonly path: string,
    readonly params: Record<string, unknown>,
    readonly query: Record<string, unknown>,
    readonly body: Record<string, unknown>,
    private readonly request: { readonly headers: Readonly<Record<string, string>> },
    readonly ip: string,
    readonly services: Services,
    readonly documents: StaticDocuments,
  ) {}

  /** Read through to the request, so a route that never looks at its headers never has them copied out of uWS. */
  get headers(): Readonly<Record<string, string>> {
    return this.request.headers
  }

  need<K extends ServicePart>(part: K): NonNullable<Services[K]> {
    const s = this.services[part]
    if (s === undefined || s === null) {
      throw new ServiceError('PROVIDER_DOWN', {
        message: `The ${part} part of the service is not wired on this deployment.`,
        detail: { reason: 'SERVICE_UNWIRED', missing: part },
      })
    }
    return s as NonNullable<Services[K]>
  }
}
