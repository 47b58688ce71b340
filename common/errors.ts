/**
 * The one error registry. Every non-2xx response of the service carries one of these codes.
 *
 * Spec (Errors): "Envelope for every non-2xx response: { error: { code, message, retryable (boolean),
 * retry_after_ms (number or null), request_id, detail: { reason } } }."
 *
 * docs/errors.md is generated from this object (`svc docs errors`) and a test fails when the two disagree.
 * Statuses the spec leaves open are recorded in docs/decisions.md.
 */
export const ERRORS = {
  VALIDATION: { status: 400, retryable: false, message: 'The request is malformed: path, query or body failed validation.' },
  UNSAFE_URL: { status: 400, retryable: false, message: 'The URL points at a loopback, private, link-local or metadata address, or is not https where required.' },
  PAYMENT_REQUIRED: { status: 402, retryable: false, message: 'Payment is required: retry with a PAYMENT-SIGNATURE header or an x-svc-payer holding credits.' },
  PAYMENT_INVALID: { status: 402, retryable: false, message: 'The payment payload is invalid.' },
  PAYMENT_REPLAYED: { status: 402, retryable: false, message: 'The payment authorization nonce was already used.' },
  OPS_FORBIDDEN: { status: 403, retryable: false, message: 'The operator credential is missing or wrong.' },
  ROUTE_NOT_FOUND: { status: 404, retryable: false, message: 'No route matches this path.' },
  DECISION_NOT_FOUND: { status: 404, retryable: false, message: 'No decision matches this id.' },
  RELEASE_NOT_FOUND: { status: 404, retryable: false, message: 'No release matches this version.' },
  ASSET_NOT_FOUND: { status: 404, retryable: false, message: 'The symbol is not listed by the venue universe, or is delisted.' },
  CARD_NOT_FOUND: { status: 404, retryable: false, message: 'No public Arena card matches this id.' },
  DEBIT_NOT_FOUND: { status: 404, retryable: false, message: 'No debit of this payer carries this ref.' },
  HOOK_ENDPOINT_NOT_FOUND: { status: 404, retryable: false, message: 'No hook endpoint of this payer matches this id.' },
  METHOD_NOT_ALLOWED: { status: 405, retryable: false, message: 'This path does not accept this method; see the Allow header.' },
  REPLAY_INPUT_LOST: { status: 409, retryable: false, message: 'The journaled inputs cannot be verified against the recorded input_hash.' },
  DECISION_REPLAYED: { status: 409, retryable: false, message: 'This decision was already recorded for these inputs.' },
  CLOCK_CLOSED: { status: 409, retryable: false, message: 'The clock is past its horizon_end; calls are immutable.' },
  CLOCK_OPEN: { status: 409, retryable: true, message: 'The previous clock is still open; ask again after its horizon_end.' },
  CALL_ALREADY_LOCKED: { status: 409, retryable: false, message: 'This payer already locked a call on this clock.' },
  HOOK_CLOCK_TERMINAL: { status: 409, retryable: false, message: 'The clock is already resolved; read the resolution route instead.' },
  HOOK_ENDPOINT_CAP: { status: 409, retryable: false, message: 'This payer already has the maximum of 10 active hook endpoints.' },
  ALERT_CAP: { status: 409, retryable: false, message: 'This payer already has the maximum of 50 active alert watches.' },
  PLAN_NOT_RECHARGEABLE: { status: 409, retryable: false, message: 'The free allowance is not rechargeable by a plan purchase.' },
  PAYLOAD_TOO_LARGE: { status: 413, retryable: false, message: 'The request body exceeds the size limit.' },
  RATE_LIMITED: { status: 429, retryable: true, message: 'Rate limit exceeded; retry after retry_after_ms.' },
  INTERNAL: { status: 500, retryable: false, message: 'Internal error.' },
  STALE_DATA: { status: 503, retryable: true, message: 'Venue data breached its staleness budget.' },
  PROVIDER_DOWN: { status: 503, retryable: true, message: 'A venue, provider or service part is unreachable or not wired.' },
  CONTACTS_UNWIRED: { status: 503, retryable: false, message: 'Contacts are not recorded on this deployment.' },
  OPS_UNSET: { status: 503, retryable: false, message: 'No operator token is wired on this deployment.' },
} as const satisfies Record<string, { status: number; retryable: boolean; message: string }>

export type ErrorCode = keyof typeof ERRORS

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[]

/**
 * Stable machine reasons carried in detail.reason beside a code (spec: "Stable machine reasons in detail.reason
 * or as codes"). When no reason is given, detail.reason repeats the code.
 */
export const REASONS = {
  REQUEST_VALIDATION_FAILED: { code: 'VALIDATION', meaning: 'a path parameter, query parameter or body field failed its schema; detail.field names it' },
  MALFORMED_JSON: { code: 'VALIDATION', meaning: 'the body is not valid JSON' },
  INSUFFICIENT_BALANCE: { code: 'PAYMENT_REQUIRED', meaning: 'credits cannot cover the call; detail carries balance and required_credits' },
  CIRCUIT_OPEN: { code: 'PROVIDER_DOWN', meaning: 'the provider circuit breaker is open after repeated failures' },
  JEV_CALL_FAILED: { code: 'PROVIDER_DOWN', meaning: 'the model layer call failed' },
  SERVICE_UNWIRED: { code: 'PROVIDER_DOWN', meaning: 'a service part this route needs is not wired on this deployment; detail.missing names it' },
  FACILITATOR_UNAVAILABLE: { code: 'PAYMENT_REQUIRED', meaning: 'the x402 facilitator could not verify or settle the payment (down, timeout, rate limited); nothing was charged; sign a new authorization and retry' },
} as const satisfies Record<string, { code: ErrorCode; meaning: string }>

export type ReasonCode = keyof typeof REASONS
