/** How to prove a payer, in one sentence every refusal, document and tool description shares (one spelling). */
export const CHALLENGE_PATH = '/v1/auth/challenge'
export const SESSION_PATH = '/v1/auth/session'

export const SIGN_IN_HOWTO =
  `Prove control of the payer address: take the sign-in-with-x challenge (in this refusal, any 402 PAYMENT-REQUIRED, or GET ${CHALLENGE_PATH}), ` +
  'sign its EIP-4361 message with the address (EIP-191, chain eip155:8453), and send base64 of the signed payload as the SIGN-IN-WITH-X header ' +
  `(one use), or exchange it once at POST ${SESSION_PATH} for a bearer token and send Authorization: Bearer <token> (x-svc-payer keeps naming the payer).`
