/**
 * The answer keys of every instance of a cluster (issue 32), as append-only records on the `answer.keys` topic (key =
 * the address): each instance publishes the windows of its own keyring (record/answerKeys/answerKeyFile.ts) at start,
 * so a receipt signed by any instance verifies at every instance and GET /v1/answer-keys is the same everywhere. A
 * window is named by address and valid_from; a later record of it with valid_until set is its retirement. Not sunk to
 * Parquet: the keys are published by the API, and the log is their only shared copy.
 */
import { Instant, Nullable, Type, type Static } from '../../common/schema.ts'
import { JournalDef } from '../journal/JournalDef.ts'

export const ANSWER_KEY_RECORD_SCHEMA = Type.Object(
  {
    /** `<address>@<valid_from>@<valid_until or open>`: one record per state of a window. */
    id: Type.String({ minLength: 1, maxLength: 200 }),
    /** The instance that published it (KAFKA_INSTANCE_ID). */
    instance: Type.String({ minLength: 1, maxLength: 100 }),
    address: Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' }),
    valid_from: Instant,
    valid_until: Nullable(Instant),
    created_at: Instant,
  },
  { additionalProperties: false },
)

export type AnswerKeyRow = Static<typeof ANSWER_KEY_RECORD_SCHEMA>

export const ANSWER_KEYS = new JournalDef({
  name: 'answer.keys',
  schema: ANSWER_KEY_RECORD_SCHEMA,
  key: (r) => r.address.toLowerCase(),
  id: (r) => r.id,
  time: (r) => Date.parse(r.created_at),
  table: { rows: 'answer_key_rows', dir: 'answer.keys' },
})
