/**
 * Token buckets per client IP and per verified payer.
 *
 * Spec (Errors): "RATE_LIMITED | 429 | yes | token bucket exhausted (per IP and per verified payer)".
 * Sizes are a deployment choice (docs/decisions.md) and are published in GET /v1/pricing under rate_limits.
 */
export interface BucketPolicy {
  /** Bucket size: requests allowed in a burst. */
  burst: number
  /** Refill in tokens per second. */
  refillPerSec: number
}

export interface RateLimitPolicy {
  ip: BucketPolicy
  payer: BucketPolicy
}

export const DEFAULT_RATE_LIMITS: RateLimitPolicy = {
  ip: { burst: 60, refillPerSec: 20 },
  payer: { burst: 120, refillPerSec: 40 },
}

export interface RateDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** Seconds until the bucket is full again (RateLimit-Reset); on a refusal, until the next token. */
  resetSec: number
  /** Milliseconds until one token is available (whole seconds, equal to resetSec on a refusal); 0 when allowed. */
  retryAfterMs: number
}

interface Bucket {
  tokens: number
  at: number
}

/** Buckets live in a Map; full ones are dropped by a periodic sweep so idle clients cost nothing. */
class BucketSet {
  private readonly buckets = new Map<string, Bucket>()
  constructor(
    readonly policy: BucketPolicy,
    private readonly maxKeys: number,
  ) {}

  take(key: string, now: number): RateDecision {
    const { burst, refillPerSec } = this.policy
    let b = this.buckets.get(key)
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.sweep(now)
      b = { tokens: burst, at: now }
      this.buckets.set(key, b)
    } else {
      b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * refillPerSec)
      b.at = now
    }
    const allowed = b.tokens >= 1
    if (allowed) {
      b.tokens -= 1
      return { allowed, limit: burst, remaining: Math.floor(b.tokens), resetSec: Math.ceil((burst - b.tokens) / refillPerSec), retryAfterMs: 0 }
    }
    // A refusal names ONE wait (issue 29: reset, Retry-After and retry_after_ms disagreed): the whole seconds until a
    // token is back, the unit the headers can carry, so all three say the same.
    const waitSec = Math.max(1, Math.ceil((1 - b.tokens) / refillPerSec))
    return { allowed, limit: burst, remaining: 0, resetSec: waitSec, retryAfterMs: waitSec * 1000 }
  }

  sweep(now: number): void {
    const { burst, refillPerSec } = this.policy
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 1000) * refillPerSec >= burst) this.buckets.delete(key)
    }
    // Under a flood of distinct keys, forget the oldest rather than grow without bound.
    if (this.buckets.size >= this.maxKeys) {
      let drop = this.buckets.size - Math.floor(this.maxKeys * 0.9)
      for (const key of this.buckets.keys()) {
        if (drop-- <= 0) break
        this.buckets.delete(key)
      }
    }
  }

  get size(): number {
    return this.buckets.size
  }
}

export class RateLimiter {
  readonly policy: RateLimitPolicy
  private readonly byIp: BucketSet
  private readonly byPayer: BucketSet

  constructor(policy: RateLimitPolicy = DEFAULT_RATE_LIMITS, maxKeys = 100_000) {
    this.policy = policy
    this.byIp = new BucketSet(policy.ip, maxKeys)
    this.byPayer = new BucketSet(policy.payer, maxKeys)
  }

  takeIp(ip: string, now: number): RateDecision {
    return this.byIp.take(ip, now)
  }

  /** Only for a proven payer: a live bearer session, or the address an x402 payment or a verified sign-in proved. */
  takePayer(payer: string, now: number): RateDecision {
    return this.byPayer.take(payer.toLowerCase(), now)
  }

  /** The published form (GET /v1/pricing rate_limits). */
  describe(): { per_ip: { burst: number; refill_per_sec: number }; per_payer: { burst: number; refill_per_sec: number } } {
    return {
      per_ip: { burst: this.policy.ip.burst, refill_per_sec: this.policy.ip.refillPerSec },
      per_payer: { burst: this.policy.payer.burst, refill_per_sec: this.policy.payer.refillPerSec },
    }
  }
}
