/**
 * What proves a payer, as append-only records on the `auth.proofs` topic (key = the address): a sign-in nonce used
 * (so a signed challenge proves control once, also across a restart within its validity), a session opened (only the
 * SHA-256 of its bearer token is kept, never the token) and a session revoked. A session is never updated: revocation
 * is a new record naming the hash it ends. Not sunk to Parquet: nothing here is analytics, and token hashes stay on
 * the log only.
 */
import { Instant, StringEnum, Type, type Static } from '../../common/schema.ts'
import { JournalDef } from '../journal/JournalDef.ts'

export const PAYER_PROOF_KINDS = ['nonce_used', 'session_opened', 'session_revoked'] as const
export type PayerProofKind = (typeof PAYER_PROOF_KINDS)[number]

export const PAYER_PROOF_RECORD_SCHEMA = Type.Object(
  {
    /** nonce_used: 'n:' + the nonce; session_opened: 's:' + token hash; session_revoked: 'r:' + token hash. */
    id: Type.String({ minLength: 3, maxLength: 200 }),
    kind: StringEnum(PAYER_PROOF_KINDS),
    /** Lowercase 0x address the proof is for. */
    address: Type.String({ pattern: '^0x[0-9a-f]{40}$' }),
    /** nonce_used: the nonce; session_*: the hex SHA-256 of the bearer token. */
    subject: Type.String({ minLength: 1, maxLength: 200 }),
    /** When the nonce or session stops mattering (kept until then, dropped from memory after). */
    expires_at: Instant,
    created_at: Instant,
  },
  { additionalProperties: false },
)

export type PayerProofRow = Static<typeof PAYER_PROOF_RECORD_SCHEMA>

export const PAYER_PROOFS = new JournalDef({
  name: 'auth.proofs',
  schema: PAYER_PROOF_RECORD_SCHEMA,
  key: (r) => r.address,
  id: (r) => r.id,
  time: (r) => Date.parse(r.created_at),
  table: { rows: 'payer_proof_rows', dir: 'auth.proofs' },
})
