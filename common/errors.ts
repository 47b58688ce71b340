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
  PAYER_UNPROVEN: { status: 401, retryable: false, message: 'The payer named is not proven: sign in with the sign-in-with-x challenge in detail (SIGN-IN-WITH-X header) or send Authorization: Bearer <session token> for that address.' },
  OPS_FORBIDDEN: { status: 403, retryable: false, message: 'The operator credential is missing or wrong.' },
  ORIGIN_FORBIDDEN: { status: 403, retryable: false, message: 'Browser pages of this Origin may not call the API (cross-origin access is open only to the configured origins).' },
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
  UNSUPPORTED_MEDIA_TYPE: { status: 415, retryable: false, message: 'The body of this route must be JSON: send Content-Type: application/json.' },
  RATE_LIMITED: { status: 429, retryable: true, message: 'Rate limit exceeded; retry after retry_after_ms.' },
  INTERNAL: { status: 500, retryable: false, message: 'Internal error.' },
  STALE_DATA: { status: 503, retryable: true, message: 'Venue data breached its staleness budget.' },
  PROVIDER_DOWN: { status: 503, retryable: true, message: 'A venue, provider or service part is unreachable or not wired.' },
  CONTACTS_UNWIRED: { status: 503, retryable: false, message: 'Contacts are not recorded on this deployment.' },
  OPS_UNSET: { status: 503, retryable: false, message: 'No operator token is wired on this deployment.' },
} as const satisfies Record<string, { status: number; retryable: boolean; message: string }>

export type ErrorCode = keyof typeof ERRORS

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[]

/** One machine reason: the codes it comes with and what it means. */
export interface ReasonEntry {
  readonly codes: readonly ErrorCode[]
  readonly meaning: string
}

/**
 * The x402 protocol's own machine reasons (x402-v2 §9: the spec list and the strings @x402/evm@2.27.0 emits), kept
 * verbatim in lower snake case. The rail's local checks and the facilitator's verify/settle answers carry them with
 * 402 PAYMENT_INVALID; a facilitator string outside this list is reported as unexpected_verify_error or
 * unexpected_settle_error, with the string itself in detail.facilitator_reason.
 */
const X402_REASON_MEANINGS = {
  insufficient_funds: "the payer's USDC balance cannot cover the amount",
  invalid_payload: 'PAYMENT-SIGNATURE is not base64 JSON of the documented PaymentPayload shape',
  invalid_x402_version: 'x402Version is not 2',
  invalid_scheme: 'the payment scheme is not exact',
  unsupported_scheme: 'the facilitator does not support the scheme',
  invalid_network: 'the network is not Base (eip155:8453)',
  invalid_payment_requirements: "the accepted requirements do not match this route's",
  invalid_transaction_state: 'the on-chain transaction is not in a state that can settle',
  invalid_exact_evm_payload_signature: 'the EIP-3009 signature is malformed or does not recover authorization.from',
  invalid_exact_evm_payload_recipient_mismatch: "authorization.to is not this service's payTo (spec spelling)",
  invalid_exact_evm_recipient_mismatch: "authorization.to is not this service's payTo",
  invalid_exact_evm_payload_authorization_value_mismatch: 'authorization.value is not exactly the price',
  invalid_exact_evm_payload_authorization_valid_before: 'the authorization expired (validBefore too soon)',
  invalid_exact_evm_payload_authorization_valid_after: 'the authorization is not valid yet (validAfter in the future)',
  invalid_exact_evm_scheme: 'the facilitator refused the scheme',
  invalid_exact_evm_network_mismatch: 'the facilitator found a different network',
  invalid_exact_evm_missing_eip712_domain: 'the EIP-712 domain (token name, version) is missing',
  invalid_exact_evm_signature: 'the facilitator could not verify the signature',
  invalid_exact_evm_authorization_value: 'the facilitator refused the authorization value',
  invalid_exact_evm_payload_undeployed_smart_wallet: 'the payer is an undeployed smart wallet',
  invalid_exact_evm_transaction_failed: 'the settlement transaction failed on chain',
  invalid_exact_evm_transfer_event_mismatch: 'the settlement transfer event does not match the authorization',
  invalid_exact_evm_token_name_mismatch: 'the EIP-712 token name does not match the asset',
  invalid_exact_evm_token_version_mismatch: 'the EIP-712 token version does not match the asset',
  invalid_exact_evm_eip3009_not_supported: 'the asset does not support EIP-3009',
  invalid_exact_evm_nonce_already_used: 'the authorization nonce is already used on chain',
  invalid_exact_evm_insufficient_balance: "the payer's token balance cannot cover the amount",
  invalid_exact_evm_transaction_simulation_failed: 'the settlement transaction failed in simulation',
  invalid_exact_evm_failed_to_parse_signature: 'the facilitator could not parse the signature',
  asset_not_deployed_contract: 'the asset address is not a deployed contract',
  eip6492_factory_not_allowed: 'the EIP-6492 wallet factory is not allowed',
  settlement_pending: 'the transfer was broadcast but no receipt came in time; it may still land (logged for reconciliation)',
  unexpected_verify_error: 'the facilitator rejected the payment at verify for a reason outside the x402 list',
  unexpected_settle_error: 'settlement failed for a reason outside the x402 list, or on a different network',
} as const

export type X402ProtocolReason = keyof typeof X402_REASON_MEANINGS

/** A reason string received from a facilitator that is one of the x402 protocol reasons. */
export function isX402ProtocolReason(reason: string): reason is X402ProtocolReason {
  return Object.hasOwn(X402_REASON_MEANINGS, reason)
}

type X402ReasonEntries = { readonly [R in X402ProtocolReason]: { readonly codes: readonly ['PAYMENT_INVALID']; readonly meaning: (typeof X402_REASON_MEANINGS)[R] } }

const X402_REASONS = Object.fromEntries(
  Object.entries(X402_REASON_MEANINGS).map(([reason, meaning]) => [reason, { codes: ['PAYMENT_INVALID'], meaning }]),
) as unknown as X402ReasonEntries

/**
 * The closed registry of machine reasons carried in detail.reason beside a code (spec: "Stable machine reasons in
 * detail.reason or as codes"). When no reason is given, detail.reason repeats the code. docs/errors.md lists every
 * one and a test checks both directions; ServiceError and EngineError accept no other reason.
 */
export const REASONS = {
  REQUEST_VALIDATION_FAILED: { codes: ['VALIDATION'], meaning: 'a path parameter, query parameter, header or body field failed its schema or check; detail.field names it' },
  MALFORMED_JSON: { codes: ['VALIDATION'], meaning: 'the body is not valid JSON' },
  NOT_A_CLAIM: { codes: ['VALIDATION'], meaning: 'the decision is a refusal: the house made no claim, so there is no clock to lock a call on; detail.field names the decision id' },
  PAYER_MISMATCH: { codes: ['VALIDATION'], meaning: 'the payer named in the x-svc-payer header and the one in the query or body differ; name one payer' },
  INVALID_CURSOR: { codes: ['VALIDATION'], meaning: 'the cursor is not one this list or stream issued (malformed, from another list, or from an older format); detail.field names the parameter; start again without it' },
  AMBIGUOUS_PREFIX: { codes: ['VALIDATION'], meaning: 'the decision id prefix matches more than one decision; give more characters' },
  URL_ADDRESS_REFUSED: { codes: ['UNSAFE_URL'], meaning: 'the host is, or resolves to, an address the service never connects to (loopback, private, carrier-grade NAT, unique local, link-local, multicast, unspecified, reserved, IPv4-mapped, cloud metadata); detail.address and detail.address_class name it' },
  URL_SCHEME_REFUSED: { codes: ['UNSAFE_URL'], meaning: 'the URL is not http(s), or not https where https is required (push endpoints); detail.scheme names it' },
  URL_CREDENTIALS_REFUSED: { codes: ['UNSAFE_URL'], meaning: 'the URL carries a user name or password; deliveries never send credentials in a URL' },
  URL_HOST_UNRESOLVABLE: { codes: ['UNSAFE_URL'], meaning: 'the host name did not resolve to any address; detail.host names it' },
  PAYMENT_REQUIRED: { codes: ['PAYMENT_REQUIRED'], meaning: 'no payment was offered: sign the PAYMENT-REQUIRED challenge or name an x-svc-payer holding credits' },
  INSUFFICIENT_BALANCE: { codes: ['PAYMENT_REQUIRED'], meaning: 'credits cannot cover the call; detail carries balance and required_credits' },
  PAYMENT_VERIFIER_UNWIRED: { codes: ['PAYMENT_REQUIRED'], meaning: 'a PAYMENT-SIGNATURE was sent but no x402 verifier is wired on this deployment' },
  CREDITS_UNWIRED: { codes: ['PAYMENT_REQUIRED'], meaning: 'an x-svc-payer was sent but no credit ledger is wired on this deployment' },
  FACILITATOR_UNAVAILABLE: { codes: ['PAYMENT_REQUIRED'], meaning: 'the x402 facilitator could not verify or settle the payment (down, timeout, rate limited); nothing was charged; sign a new authorization and retry' },
  SIGN_IN_REQUIRED: { codes: ['PAYER_UNPROVEN', 'PAYMENT_REQUIRED'], meaning: 'a payer is named without a proof of control: sign the sign-in-with-x challenge in detail (or from GET /v1/auth/challenge) and send it as SIGN-IN-WITH-X, or exchange it at POST /v1/auth/session for a bearer token' },
  SIGN_IN_MALFORMED: { codes: ['PAYER_UNPROVEN', 'PAYMENT_REQUIRED'], meaning: 'the SIGN-IN-WITH-X header is not base64 of a sign-in-with-x payload (detail.field names what is wrong)' },
  SIGN_IN_DOMAIN: { codes: ['PAYER_UNPROVEN', 'PAYMENT_REQUIRED'], meaning: "the signed message's domain is not this service's host" },
  SIGN_IN_URI: { codes: ['PAYER_UNPROVEN', 'PAYMENT_REQUIRED'], meaning: "the signed message's URI is not on this service's origin" },
  SIGN_IN_CHAIN: { codes: ['PAYER_UNPROVEN', 'PAYMENT_REQUIRED'], meaning: 'the signed message names a chain or signature type other than eip155:8453 with eip191' },
  SIGN_IN_EXPIRED: { codes: ['PAYER_UNPROVEN', 'PAYMENT_REQUIRED'], meaning: 'the signed message is expired, issued more than 5 minutes ago, or issued in the future; fetch a fresh challenge' },
  SIGN_IN_NONCE_UNKNOWN: { codes: ['PAYER_UNPROVEN', 'PAYMENT_REQUIRED'], meaning: 'the nonce was not issued by this service (or its challenge expired); fetch a fresh challenge' },
  SIGN_IN_NONCE_REPLAYED: { codes: ['PAYER_UNPROVEN', 'PAYMENT_REQUIRED'], meaning: 'the nonce was already used: a signed challenge proves control once; fetch a fresh challenge' },
  SIGN_IN_SIGNATURE: { codes: ['PAYER_UNPROVEN', 'PAYMENT_REQUIRED'], meaning: 'the signature does not recover the address in the message (EOA, EIP-191); smart-wallet signatures (EIP-1271/6492) are not accepted' },
  PROOF_FOR_OTHER_PAYER: { codes: ['PAYER_UNPROVEN', 'PAYMENT_REQUIRED'], meaning: 'the proof (sign-in, session token or x402 payment) is for another address than the payer named; detail.proven names it' },
  SESSION_INVALID: { codes: ['PAYER_UNPROVEN', 'PAYMENT_REQUIRED'], meaning: 'the bearer token is unknown, revoked or expired; sign in again' },
  BODY_NOT_JSON: { codes: ['UNSUPPORTED_MEDIA_TYPE'], meaning: 'a body was sent with a Content-Type other than application/json; detail.content_type names it' },
  PAYMENT_REPLAYED: { codes: ['PAYMENT_REPLAYED'], meaning: 'the authorization nonce was already used; detail names payer and nonce' },
  SETTLEMENT_FAILED: { codes: ['PAYMENT_INVALID'], meaning: 'a payment rail could not settle the payment and gave no protocol reason; nothing was recorded' },
  ...X402_REASONS,
  clock_open: { codes: ['CLOCK_OPEN'], meaning: 'the previous clock of this question is open; detail.horizon_end says when to ask again' },
  ruleset_unknown: { codes: ['REPLAY_INPUT_LOST'], meaning: 'the recorded ruleset is not known to this build' },
  journal_missing: { codes: ['REPLAY_INPUT_LOST'], meaning: 'the decision has no journaled inputs' },
  journal_hash_mismatch: { codes: ['REPLAY_INPUT_LOST'], meaning: 'the journaled inputs do not hash to the recorded input_hash' },
  fitted_state_missing: { codes: ['REPLAY_INPUT_LOST'], meaning: 'the fitted parameters the decision used are not in the fit store' },
  LEDGER_CONFLICT: { codes: ['INTERNAL'], meaning: 'the ledger refused a record that conflicts with one already recorded' },
  decision_id_recorded: { codes: ['INTERNAL'], meaning: 'a decision with this decision_id is already recorded with other content; the ledger keeps the first' },
  outcome_recorded: { codes: ['INTERNAL'], meaning: 'the decision already has an outcome; a clock is resolved once' },
  unknown_decision: { codes: ['INTERNAL'], meaning: 'an outcome names a decision the ledger does not hold' },
  ADMIN_KEY_REJECTED: { codes: ['OPS_FORBIDDEN'], meaning: 'x-admin-key is missing or is not the admin key configured for the operator funnel' },
  PROVIDER_DOWN: { codes: ['PROVIDER_DOWN'], meaning: 'a venue or provider could not be read and no earlier answer exists; detail.provider names it' },
  SERVICE_UNWIRED: { codes: ['PROVIDER_DOWN'], meaning: 'a service part this route needs is not wired on this deployment; detail.missing names it' },
  NOT_READY: { codes: ['PROVIDER_DOWN'], meaning: 'the service is not ready; detail carries the health rollup' },
  SHUTTING_DOWN: { codes: ['PROVIDER_DOWN'], meaning: 'the service is stopping and opens no new live stream; reconnect after retry_after_ms with your last cursor' },
  STREAM_CONNECTIONS_CAPPED: { codes: ['RATE_LIMITED'], meaning: 'this client address already holds the most live streams allowed (SVC_STREAM_MAX_PER_IP); detail.limit names it; close one or retry later' },
  NO_VENUE_DATA: { codes: ['PROVIDER_DOWN'], meaning: 'no venue data (event time) has reached the engine yet' },
  NO_MARKET_DATA: { codes: ['STALE_DATA', 'PROVIDER_DOWN'], meaning: 'no market data for the asset has reached the service yet; detail.asset names it' },
  WARMING_UP: { codes: ['STALE_DATA'], meaning: 'the service has (re)started and its market state has not caught up with the venue yet; retry_after_ms says when to look again' },
  VENUE_UNREACHABLE: { codes: ['PROVIDER_DOWN'], meaning: 'the live venue has not answered since the service started, so no price is current; detail.stage and detail.last_error say what the connector sees' },
  PAYER_OWNER_UNREACHABLE: { codes: ['PROVIDER_DOWN'], meaning: 'several instances: the instance that serves this payer\'s credits cannot be reached, or none does while the cluster rebalances; nothing was charged, and retry_after_ms says when to try again' },
  PEER_TOKEN_REJECTED: { codes: ['OPS_FORBIDDEN'], meaning: 'a request forwarded between instances carries an x-svc-peer token that does not verify (another signing secret, another request line, or too old)' },
  EVENT_LOG_UNREACHABLE: { codes: ['PROVIDER_DOWN'], meaning: 'the event log (the Kafka broker) cannot be reached, so the paid answer cannot be recorded; nothing was charged, and retry_after_ms says when to try again' },
  VENUE_STALE: { codes: ['STALE_DATA'], meaning: "the venue's newest data for the asset is older than its staleness budget (the connector is reconnecting or the venue is silent); detail names the input, its age_ms and staleness_budget_ms" },
  WALLET_PROVIDER_UNWIRED: { codes: ['PROVIDER_DOWN'], meaning: 'an account-scoped question needs a wallet provider and none is wired' },
  WALLET_PROVIDER_DOWN: { codes: ['PROVIDER_DOWN'], meaning: 'the wallet provider could not be read; detail.provider_reason says why' },
  ENGINE_CLOSED: { codes: ['PROVIDER_DOWN'], meaning: 'the decision engine is closed or its ledger follower failed' },
  CIRCUIT_OPEN: { codes: ['PROVIDER_DOWN'], meaning: 'the provider circuit breaker is open after repeated failures' },
  JEV_CALL_FAILED: { codes: ['PROVIDER_DOWN'], meaning: 'the model layer call failed' },
  CURVE_RESTATED: { codes: ['STALE_DATA'], meaning: 'the intelligence snapshots on disk no longer verify as a hash chain (a row was changed or removed); the curve refuses rather than serve restated history' },
} as const satisfies Record<string, ReasonEntry>

export type ReasonCode = keyof typeof REASONS

export const REASON_CODES = Object.keys(REASONS) as ReasonCode[]
