/**
 * The banned-profit-language scanner for the funding and liquidation surfaces.
 *
 * Spec (Market, liquidation, funding, wallet, universe — Assumptions block): "economics_modeled is always the string
 * 'none'; raw context, never a profit claim; tool output is scanned for banned profit language".
 *
 * Every object key and every string value of an output is normalised (camelCase split, lower-cased, anything other
 * than letters, digits and apostrophes turned into a space, so `expected_profit_usd`, `Risk-Free` and `riskFree` all
 * read as words) and matched against the phrases below. The service writes these outputs itself, so a match is a
 * wiring fault — a field, label or upstream string that must not reach a caller — never a caller's error: the
 * adapter logs it and answers INTERNAL instead of serving it.
 */
import type { Logger } from 'pino'
import { ServiceError } from '../../common/ServiceError.ts'

export interface BannedPhrase {
  /** Stable id, reported in logs. */
  id: string
  /** Matched against the normalised text (lower case, single spaces). */
  pattern: RegExp
  /** Why it is banned. */
  why: string
}

/** The documented list. Each pattern is anchored on word boundaries so ordinary words that contain it do not match. */
export const BANNED_PROFIT_PHRASES: readonly BannedPhrase[] = [
  { id: 'guaranteed', pattern: /\bguarantee(s|d)?\b/, why: 'no outcome of a market is guaranteed' },
  { id: 'risk-free', pattern: /\b(risk ?free|riskless|no risk|zero risk|without risk)\b/, why: 'every position carries risk' },
  { id: 'profit', pattern: /\bprofit(s|able|ability)?\b/, why: 'the service models no economics (economics_modeled: none)' },
  { id: 'arbitrage-opportunity', pattern: /\b(arbitrage|arb) opportunit(y|ies)\b/, why: 'a funding or basis figure is context, not a trade' },
  { id: 'free-money', pattern: /\b(free|easy) money\b/, why: 'a return claim' },
  { id: 'yield', pattern: /\b(yield(s|ing)?|apy|apr)\b/, why: 'funding is a rate the venue reports, not a yield claimed for a position' },
  { id: 'passive-income', pattern: /\bpassive income\b/, why: 'a return claim' },
  { id: 'cannot-lose', pattern: /\b(can't|cannot|can not|won't) lose\b|\bno lose\b/, why: 'a return claim' },
  { id: 'sure-thing', pattern: /\bsure (thing|bet|win)\b/, why: 'a certainty claim' },
  { id: 'make-money', pattern: /\b(make|making|makes|earn|earns|earning) money\b/, why: 'a return claim' },
]

export interface ProfitLanguageViolation {
  /** JSON pointer of the key or value. */
  path: string
  /** 'key' when an object key matched, else 'value'. */
  where: 'key' | 'value'
  phrase: string
  /** The offending text (at most 200 characters). */
  text: string
}

/** 'riskFree_rate-X' → 'risk free rate x'. */
export function normaliseForScan(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[^a-z0-9']+/g, ' ')
    .trim()
}

function check(text: string, path: string, where: 'key' | 'value', out: ProfitLanguageViolation[]): void {
  const norm = normaliseForScan(text)
  if (norm === '') return
  for (const p of BANNED_PROFIT_PHRASES) if (p.pattern.test(norm)) out.push({ path, where, phrase: p.id, text: text.slice(0, 200) })
}

const pointer = (base: string, key: string | number) => `${base}/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`

/** Every banned phrase in the keys and string values of a JSON-safe value. */
export function scanProfitLanguage(value: unknown): ProfitLanguageViolation[] {
  const out: ProfitLanguageViolation[] = []
  const walk = (v: unknown, path: string): void => {
    if (typeof v === 'string') check(v, path, 'value', out)
    else if (Array.isArray(v)) v.forEach((x, i) => walk(x, pointer(path, i)))
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        const p = pointer(path, k)
        check(k, p, 'key', out)
        walk(x, p)
      }
    }
  }
  walk(value, '')
  return out
}

/**
 * Passes `value` through when it is clean; otherwise logs the violations and throws INTERNAL (the output is never
 * served; on a paid route the payment is released because the handler failed).
 */
export function assertNoProfitLanguage<T>(value: T, surface: string, log: Logger): T {
  const violations = scanProfitLanguage(value)
  if (violations.length === 0) return value
  log.error({ surface, violations }, 'banned profit language in a funding/liquidation output: not served')
  throw new ServiceError('INTERNAL')
}
