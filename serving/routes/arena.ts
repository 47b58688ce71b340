/**
 * Arena routes (spec, Endpoints → Arena). Transport only: every rule is the Arena's (product/arena/Arena.ts). The six
 * reads are MCP tools (spec, MCP tool server: svc_arena_profile … svc_arena_levels); writes are REST only.
 *
 * Spec (Authentication 1): Arena routes identify the payer by "header payer (and query parameter payer where
 * stated)": the caller-scoped reads take either (query for MCP clients, whose proof of the payer rides on the MCP HTTP
 * request's headers); both given must agree.
 */
import { ServiceError } from '../../common/ServiceError.ts'
import { Address, Open, Strict, StringEnum, Type } from '../../common/schema.ts'
import {
  AGENT_RESULT, CARD, LEADERBOARD, LEVELS_DOC, NEXT_ACTION, NOTIFICATION_FEED, NotificationKind, OPT_IN_RESULT, PREFERENCES, PROFILE, QUEST_BOARD,
  READ_RESULT, SEASON,
} from '../../product/arena/schemas.ts'
import { FEED_LIMIT } from '../../product/arena/ArenaProjection.ts'
import { CURSOR_PARAM, FREE, PAYER_IN_ARENA, callerPayer, cursorOf, env } from './define.ts'
import type { RouteDef } from './types.ts'

const PAYER_EITHER = {
  headers: Open({ payer: Type.Optional(Address) }),
  query: Open({ payer: Type.Optional(Address) }),
}
const PAYER_REQUIRED_HEADER = Open({ payer: Address })

export const ARENA_ROUTES: readonly RouteDef[] = [
  {
    id: 'arena.profile',
    method: 'GET',
    path: '/v1/arena/profile',
    summary: "A payer's Arena profile: rank, XP, next rank, discount, stats, streak, badges, season standing and quests",
    tags: ['arena'],
    pay: FREE,
    payer: PAYER_IN_ARENA,
    mcp: {
      name: 'svc_arena_profile',
      description:
        "A player's standing in the Arena: rank (derived from XP), XP and the distance to the next rank, the rank's price discount, call stats (calls, correct, accuracy, current and longest streak), badges, this season's standing and today's and this week's quests. Pass payer (address). Free.",
    },
    needs: ['arena'],
    request: PAYER_EITHER,
    response: env(PROFILE),
    errors: [],
    handler: (ctx) => ({ data: ctx.need('arena').profile(callerPayer(ctx, 'payer', 'query')) }),
  },
  {
    id: 'arena.quests',
    method: 'GET',
    path: '/v1/arena/quests',
    summary: 'Active daily and weekly quests with target, measured progress, XP reward and expiry, plus recent completions',
    tags: ['arena'],
    pay: FREE,
    payer: PAYER_IN_ARENA,
    mcp: {
      name: 'svc_arena_quests',
      description:
        "A player's quest board: today's (UTC) and this ISO week's quests, each with its target, measured progress, XP reward and expiry instant, plus recently completed quests. Pass payer (address). Free.",
    },
    needs: ['arena'],
    request: PAYER_EITHER,
    response: env(QUEST_BOARD),
    errors: [],
    handler: (ctx) => ({ data: ctx.need('arena').quests(callerPayer(ctx, 'payer', 'query')) }),
  },
  {
    id: 'arena.season',
    method: 'GET',
    path: '/v1/arena/season',
    summary: 'The season clock (ISO week) and its boards, humans and agents ranked apart; a past season is frozen',
    tags: ['arena'],
    pay: FREE,
    mcp: {
      name: 'svc_arena_season',
      description:
        'The current Arena season (an ISO week, e.g. 2026-W10): its start, end and seconds remaining, with the season boards ranked separately for humans and agents, and the previous season frozen at its end. Optional season_key reads a past season. Free.',
    },
    needs: ['arena'],
    request: { query: Open({ season_key: Type.Optional(Type.String({ pattern: '^[0-9]{4}-W[0-9]{2}$' })) }) },
    response: env(SEASON),
    errors: [],
    handler: (ctx) => {
      const key = typeof ctx.query.season_key === 'string' ? ctx.query.season_key : undefined
      const season = ctx.need('arena').season(key)
      if (!season) {
        throw new ServiceError('VALIDATION', { message: `${key} is not an ISO week.`, detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/query/season_key' } })
      }
      return { data: season }
    },
  },
  {
    id: 'arena.card',
    method: 'GET',
    path: '/v1/arena/card/{public_id}',
    summary: 'Public standing of an opted-in player, never its address; unknown and never-opted-in ids answer the same 404',
    tags: ['arena'],
    pay: FREE,
    needs: ['arena'],
    request: { params: Strict({ public_id: Type.String({ minLength: 1, maxLength: 64 }) }) },
    response: env(CARD),
    errors: ['CARD_NOT_FOUND'],
    handler: (ctx) => {
      const card = ctx.need('arena').card(String(ctx.params.public_id))
      // One answer for an id that names nobody and for one that is not public: the 404 must not tell them apart.
      if (!card) throw new ServiceError('CARD_NOT_FOUND', { detail: { field: '/params/public_id' } })
      return { data: card }
    },
  },
  {
    id: 'arena.next_action',
    method: 'GET',
    path: '/v1/arena/next-action',
    summary: 'The single recommended next action, from open quest progress',
    tags: ['arena'],
    pay: FREE,
    payer: PAYER_IN_ARENA,
    mcp: {
      name: 'svc_arena_next_action',
      description:
        "The one thing a player should do next in the Arena: the open quest closest to completion (how many more, its XP reward, when it expires, which route does it). Pass payer (address). Free; call it when deciding the player's next move.",
    },
    needs: ['arena'],
    request: PAYER_EITHER,
    response: env(NEXT_ACTION),
    errors: [],
    handler: (ctx) => ({ data: ctx.need('arena').nextAction(callerPayer(ctx, 'payer', 'query')) }),
  },
  {
    id: 'arena.leaderboard',
    method: 'GET',
    path: '/v1/arena/leaderboard',
    summary: 'Leaderboard rows (opted-in players with graded calls): sort xp, accuracy or streak; track human or agent; lifetime or season',
    tags: ['arena'],
    pay: FREE,
    mcp: {
      name: 'svc_arena_leaderboard',
      description:
        'The Arena leaderboard: rows of opted-in players with rank, public handle (never an address), XP, accuracy, streak and call counts. sort = xp (default), accuracy or streak; track = human (default) or agent; scope = lifetime (default) or season (this ISO week); limit 1..200 (default 50). Free.',
    },
    needs: ['arena'],
    request: {
      query: Open({
        sort: Type.Optional(StringEnum(['xp', 'accuracy', 'streak'], { default: 'xp' })),
        track: Type.Optional(StringEnum(['human', 'agent'], { default: 'human' })),
        scope: Type.Optional(StringEnum(['lifetime', 'season'], { default: 'lifetime' })),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
      }),
    },
    response: env(LEADERBOARD),
    errors: [],
    handler: (ctx) => ({
      data: ctx.need('arena').leaderboard({
        sort: ctx.query.sort as 'xp' | 'accuracy' | 'streak',
        track: ctx.query.track as 'human' | 'agent',
        scope: ctx.query.scope as 'lifetime' | 'season',
        limit: Number(ctx.query.limit),
      }),
    }),
  },
  {
    id: 'arena.levels',
    method: 'GET',
    path: '/v1/arena/levels',
    summary: "The rank ladder contract: each Intelligence Level's credit band, ask XP and correct-call XP; each rank's XP threshold and discount",
    tags: ['arena'],
    pay: FREE,
    mcp: {
      name: 'svc_arena_levels',
      description:
        "The Arena's published rules: each Intelligence Level (credit band, XP for asking, XP for a correct call) and each rank (XP threshold, discount on the share of a credits price above the 1,000-credit judgment floor). Free; buying credits never earns XP or rank.",
    },
    needs: ['arena'],
    request: {},
    response: env(LEVELS_DOC),
    errors: [],
    handler: (ctx) => ({ data: ctx.need('arena').levels() }),
  },
  {
    id: 'arena.opt_in',
    method: 'POST',
    path: '/v1/arena/opt-in',
    summary: 'Show or hide the payer on the boards and its public card (default hidden)',
    tags: ['arena'],
    pay: FREE,
    payer: { header: 'payer' },
    needs: ['arena'],
    request: { headers: PAYER_REQUIRED_HEADER, body: Strict({ opt_in: Type.Boolean() }) },
    response: env(OPT_IN_RESULT),
    errors: [],
    handler: async (ctx) => ({ data: await ctx.need('arena').optIn(String(ctx.headers.payer), ctx.body.opt_in === true) }),
  },
  {
    id: 'arena.agent',
    method: 'POST',
    path: '/v1/arena/agent',
    summary: 'Declare or revoke the agent track; never changes rank, XP or price',
    tags: ['arena'],
    pay: FREE,
    payer: { header: 'payer' },
    needs: ['arena'],
    request: { headers: PAYER_REQUIRED_HEADER, body: Strict({ is_agent: Type.Boolean() }) },
    response: env(AGENT_RESULT),
    errors: [],
    handler: async (ctx) => ({ data: await ctx.need('arena').setAgent(String(ctx.headers.payer), ctx.body.is_agent === true) }),
  },
  {
    id: 'arena.notifications',
    method: 'GET',
    path: '/v1/arena/notifications',
    summary: 'The notification feed: unread first, then newest, at most 50, with unread_count; next_cursor pages the whole history newest first',
    tags: ['arena'],
    pay: FREE,
    payer: PAYER_IN_ARENA,
    needs: ['arena'],
    request: {
      headers: PAYER_EITHER.headers,
      query: Open({ payer: Type.Optional(Address), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: FEED_LIMIT, default: FEED_LIMIT })), cursor: CURSOR_PARAM }),
    },
    response: env(NOTIFICATION_FEED),
    errors: [],
    // Async: older pages read the rows that left memory through DuckDB (issue 31).
    handler: async (ctx) => ({ data: await ctx.need('arena').notifications(callerPayer(ctx, 'payer', 'query'), { limit: Number(ctx.query.limit), cursor: cursorOf(ctx) }) }),
  },
  {
    id: 'arena.notifications.read',
    method: 'POST',
    path: '/v1/arena/notifications/read',
    summary: 'Mark every unread notification, or just the ids given, as read',
    tags: ['arena'],
    pay: FREE,
    payer: { header: 'payer', field: 'body' },
    needs: ['arena'],
    request: { body: Strict({ payer: Address, ids: Type.Optional(Type.Array(Type.Integer({ minimum: 1 }), { maxItems: 500 })) }) },
    response: env(READ_RESULT),
    errors: [],
    handler: async (ctx) => ({
      data: await ctx.need('arena').markRead(String(ctx.body.payer), Array.isArray(ctx.body.ids) ? (ctx.body.ids as number[]) : null),
    }),
  },
  {
    id: 'arena.notifications.preferences',
    method: 'GET',
    path: '/v1/arena/notifications/preferences',
    summary: 'The effective per-kind notification toggles (an absent kind is enabled)',
    tags: ['arena'],
    pay: FREE,
    payer: PAYER_IN_ARENA,
    needs: ['arena'],
    request: PAYER_EITHER,
    response: env(PREFERENCES),
    errors: [],
    handler: (ctx) => ({ data: ctx.need('arena').preferences(callerPayer(ctx, 'payer', 'query')) }),
  },
  {
    id: 'arena.notifications.preferences.set',
    method: 'PUT',
    path: '/v1/arena/notifications/preferences',
    summary: 'Store notification toggles (merged over earlier ones; only an explicit false suppresses a kind)',
    tags: ['arena'],
    pay: FREE,
    payer: { header: 'payer', field: 'body' },
    needs: ['arena'],
    request: {
      body: Strict({
        payer: Address,
        preferences: Type.Record(NotificationKind, Type.Boolean(), { maxProperties: 32, additionalProperties: false }),
      }),
    },
    response: env(PREFERENCES),
    errors: [],
    handler: async (ctx) => ({ data: await ctx.need('arena').setPreferences(String(ctx.body.payer), ctx.body.preferences as Record<string, boolean>) }),
  },
]
