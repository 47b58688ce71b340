/**
 * Schema-first shapes: every record, request and response shape is one TypeBox schema, and its TypeScript type is
 * inferred from it (`Static<typeof X>`), so a shape is written once and validation, OpenAPI, Parquet columns and the
 * compiler all read the same definition. The schemas are plain JSON Schema (draft 2020-12 / OpenAPI 3.1) objects.
 *
 * This file holds the builders every layer shares and the spec's Shared conventions (asset, chain, address,
 * decision_id, question_id, timestamp); each domain defines its own shapes beside its code.
 */
import { Type, type Static, type TObject, type TSchema, type TUnsafe } from '@sinclair/typebox'

export { Type, type Static, type TObject, type TSchema }

/** `T | null`. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** A string enum, published as `{ type: 'string', enum: [...] }` (clearer in OpenAPI than a union of consts). */
export function StringEnum<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options })
}

/** A value of any JSON type (kept as parsed). */
export const Json = Type.Unknown()
/** An object with any fields (machine conditions, free-form detail). */
export const JsonObject = Type.Record(Type.String(), Type.Unknown())

/** Spec, Shared conventions: "timestamp | ISO-8601 UTC instant". */
export const Instant = Type.String({ format: 'date-time' })
export const NullableInstant = Nullable(Instant)
/** The ledger's own instants: always millisecond precision, UTC ('2026-01-31T12:00:00.000Z'). */
export const IsoMs = Type.String({ format: 'date-time', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$' })
export const Probability = Type.Number({ minimum: 0, maximum: 1 })
export const NullableNumber = Nullable(Type.Number())
export const NullableString = Nullable(Type.String())
export const Hex64 = Type.String({ pattern: '^[0-9a-f]{64}$' })

// ---------------------------------------------------------------- spec, Shared conventions

export const CANONICAL_ASSETS = ['BTC', 'ETH', 'SOL'] as const
/** "Paid surfaces accept BTC, ETH, SOL (the canonical assets); any other value gives 400 VALIDATION." */
export const CanonicalAsset = StringEnum(CANONICAL_ASSETS, { description: 'canonical asset' })
export type CanonicalAsset = Static<typeof CanonicalAsset>
/** The free market snapshot: any upper-case ticker; the listing is checked against the universe (404 when absent). */
export const VenueSymbol = Type.String({ pattern: '^[A-Z0-9]{1,20}$', description: 'upper-case venue symbol' })
/** "chain | enum | Only value in v1: base." */
export const Chain = StringEnum(['base'])
/** "address, payer | 0x-prefixed 20-byte hex string": the one spelling of it (schemas and code alike). */
export const ADDRESS_SOURCE = '^0x[0-9a-fA-F]{40}$'
export const ADDRESS_PATTERN = new RegExp(ADDRESS_SOURCE)
export const Address = Type.String({ pattern: ADDRESS_SOURCE })
/** "decision_id | UUID string". */
export const Uuid = Type.String({ format: 'uuid' })
/** The ledger writes ids lower-case (engine/identity.ts). */
export const DecisionId = Type.String({ pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' })
/** "The lineage route also accepts a unique prefix of 8 or more characters." */
export const DecisionIdOrPrefix = Type.String({ pattern: '^[0-9a-fA-F-]{8,36}$', description: 'decision id or a unique prefix of 8 or more characters' })
/** "question_id | string S<nn>_<name>". */
export const QuestionId = Type.String({ pattern: '^S[0-9]{2}_[a-z0-9_]+$' })
export const HttpsUrl = Type.String({ format: 'uri', maxLength: 2048, pattern: '^https?://' })

/** A request object: the listed fields and no others (a misspelt field is a 400 naming it, never ignored). */
export const Strict = <T extends Record<string, TSchema>>(properties: T) => Type.Object(properties, { additionalProperties: false })
/** Query and header objects: the listed fields; other query parameters and headers are allowed. */
export const Open = <T extends Record<string, TSchema>>(properties: T) => Type.Object(properties)
