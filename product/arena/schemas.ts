/**
 * The Arena's public shapes (spec, Arena resources; field names beyond the spec's are recorded in docs/decisions.md),
 * each one TypeBox schema.
 */
import { Address, Instant, JsonObject, Nullable, NullableInstant, StringEnum, Type } from '../../common/schema.ts'

const Int = Type.Integer({ minimum: 0 })
const Share = Type.Number({ minimum: 0, maximum: 1 })
const NullableShare = Nullable(Share)
const Handle = Type.String({ pattern: '^[a-z]+-[a-z]+-[0-9a-f]{4}$' })
const PublicId = Type.String({ pattern: '^[0-9a-f]{20}$' })

export const LEVELS_DOC = Type.Object({
  levels: Type.Array(Type.Object({
    level: Type.Integer({ minimum: 1 }),
    name: Type.String(),
    credit_band: Type.Object({ min: Int, max: Nullable(Int) }),
    ask_xp: Int,
    correct_call_xp: Int,
  })),
  ranks: Type.Array(Type.Object({ rank: Type.String(), order: Type.Integer({ minimum: 1 }), xp_threshold: Int, discount: Share, top: Type.Boolean() })),
  judgment_floor_credits: Int,
  ask_xp_daily_cap: Int,
})

export const QUEST = Type.Object({
  key: Type.String(),
  cadence: StringEnum(['daily', 'weekly']),
  title: Type.String(),
  metric: StringEnum(['calls_locked', 'correct_calls', 'markets_called']),
  period_key: Type.String(),
  target: Int,
  progress: Int,
  completed: Type.Boolean(),
  completed_at: NullableInstant,
  xp_reward: Int,
  expires_at: Instant,
})

const SEASON_STANDING = Type.Object({ season_key: Type.String(), xp: Int, calls: Int, correct: Int, board_rank: Nullable(Type.Integer({ minimum: 1 })) })

export const PROFILE = Type.Object({
  payer: Address,
  rank: Type.String(),
  xp: Int,
  next_rank: Nullable(Type.String()),
  remaining_xp: Int,
  progress: Share,
  discount: Share,
  stats: Type.Object({
    calls: Int, graded: Int, correct: Int, void: Int, accuracy: NullableShare, streak: Int, longest_streak: Int, markets_covered: Int,
  }),
  badges: Type.Array(Type.String()),
  board_opt_in: Type.Boolean(),
  is_agent: Type.Boolean(),
  public_id: PublicId,
  handle: Handle,
  season: SEASON_STANDING,
  quests: Type.Array(QUEST),
})

export const QUEST_BOARD = Type.Object({
  payer: Address,
  quests: Type.Array(QUEST),
  recent_completions: Type.Array(Type.Object({ quest: Type.String(), period_key: Type.String(), xp: Int, completed_at: Instant })),
})

export const NEXT_ACTION = Type.Object({
  payer: Address,
  action: Type.Object({
    kind: StringEnum(['quest', 'lock_call']),
    quest: Nullable(Type.String()),
    title: Type.String(),
    remaining: Int,
    xp_reward: Int,
    expires_at: NullableInstant,
    route: Type.String(),
  }),
})

const BOARD_ROW = Type.Object({
  rank: Type.Integer({ minimum: 1 }),
  handle: Handle,
  public_id: PublicId,
  title: Type.String(),
  xp: Int,
  calls: Int,
  graded: Int,
  correct: Int,
  accuracy: NullableShare,
  streak: Int,
  longest_streak: Int,
})

export const LEADERBOARD = Type.Object({
  sort: StringEnum(['xp', 'accuracy', 'streak']),
  track: StringEnum(['human', 'agent']),
  scope: StringEnum(['lifetime', 'season']),
  rows: Type.Array(BOARD_ROW),
})

const SEASON_ROW = Type.Object({
  rank: Type.Integer({ minimum: 1 }), handle: Handle, public_id: PublicId, xp: Int, calls: Int, graded: Int, correct: Int, accuracy: NullableShare,
})
const BOARDS = Type.Object({ human: Type.Array(SEASON_ROW), agent: Type.Array(SEASON_ROW) })

export const SEASON = Type.Object({
  season: Type.Object({ season_key: Type.String(), starts_at: Instant, ends_at: Instant, seconds_remaining: Int, frozen: Type.Boolean() }),
  boards: BOARDS,
  previous: Type.Object({ season_key: Type.String(), starts_at: Instant, ends_at: Instant, frozen: Type.Boolean(), boards: BOARDS }),
})

export const CARD = Type.Object({
  public_id: PublicId,
  handle: Handle,
  rank: Type.String(),
  xp: Int,
  is_agent: Type.Boolean(),
  stats: Type.Object({ calls: Int, graded: Int, correct: Int, accuracy: NullableShare, streak: Int, longest_streak: Int, markets_covered: Int }),
  badges: Type.Array(Type.String()),
  season: SEASON_STANDING,
}, { additionalProperties: false })

export const OPT_IN_RESULT = Type.Object({ payer: Address, board_opt_in: Type.Boolean(), public_id: PublicId })
export const AGENT_RESULT = Type.Object({ payer: Address, is_agent: Type.Boolean() })

export const NOTIFICATION_FEED = Type.Object({
  payer: Address,
  unread_count: Int,
  notifications: Type.Array(Type.Object({
    id: Type.Integer({ minimum: 1 }), kind: Type.String(), ref: Type.String(), payload: JsonObject, created_at: Instant, read_at: NullableInstant,
  })),
  /** The inbox's: the start of the history (every row newest first by id); a history page's: the page after it. Null at the end. */
  next_cursor: Nullable(Type.String()),
})

export const READ_RESULT = Type.Object({ payer: Address, marked: Int, unread_count: Int })
export const NotificationKind = Type.String({ pattern: '^[a-z_]{1,40}$' })
export const PREFERENCES = Type.Object({ payer: Address, preferences: Type.Record(Type.String(), Type.Boolean()) })
