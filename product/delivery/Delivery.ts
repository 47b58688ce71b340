/**
 * Delivery (spec, What the service does 8): per-decision resolution hooks, outcome hook endpoints, push, follows,
 * alert watches and contact capture. What the routes see of it: the DeliveryService's public operations (its events
 * come from the outcome bus, never from a route).
 */
import type { DeliveryService } from './DeliveryService.ts'

export type Delivery = Pick<
  DeliveryService,
  | 'checkHook' | 'armHook'
  | 'newEndpointId' | 'checkEndpoint' | 'endpointReplay' | 'registerEndpoint' | 'listEndpoints' | 'pauseEndpoint'
  | 'pushConfig' | 'registerDevice' | 'listDevices' | 'disableDevice'
  | 'setFollow' | 'listFollows' | 'removeFollow'
  | 'createAlert' | 'listAlerts' | 'deleteAlert'
  | 'recordAskIn' | 'recordContact' | 'asksOf'
>
