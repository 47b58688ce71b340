/**
 * How push messages leave the service: like hooks, through the URL guard before each send (https only, the push
 * purpose) and the pinned client to the address the guard checked, never wherever DNS says a moment later. A push
 * service URL the guard refuses is a result row (error class unsafe_url), not a throw, so one bad device never stops
 * the fan-out to the others.
 */
import { ServiceError } from '../../common/ServiceError.ts'
import type { HookTransport, UrlChecker } from './ports.ts'
import type { PushTransport } from './WebPushSender.ts'

export function guardedPushTransport(guard: UrlChecker, http: HookTransport): PushTransport {
  return {
    post: async (url, body, headers) => {
      let target
      try {
        target = await guard.check(url, 'push')
      } catch (err) {
        if (err instanceof ServiceError && err.code === 'UNSAFE_URL') return { status: null, latency_ms: 0, error_class: 'unsafe_url' }
        throw err
      }
      return http.post(target, body, headers)
    },
  }
}
