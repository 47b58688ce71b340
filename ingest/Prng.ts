/**
 * A small seeded pseudo-random generator for reproducible synthetic data: xoshiro128** (Blackman & Vigna,
 * https://prng.di.unimi.it/xoshiro128starstar.c) seeded from cyrb128 of "<seed>/<stream>" (bryc, public domain).
 *
 * Pure 32-bit integer arithmetic (Math.imul, >>>), so the same seed and stream give the same sequence on every
 * platform and Node version; nothing here reads Math.random or the wall clock. Named streams let one seed drive
 * independent parts of a model (one stream per asset), so adding a part does not shift the numbers of another.
 */

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k))
}

/** cyrb128: a fast 128-bit string hash, used only to spread a seed over the four state words. */
function cyrb128(str: string): [number, number, number, number] {
  let h1 = 1779033703
  let h2 = 3144134277
  let h3 = 1013904242
  let h4 = 2773480762
  for (let i = 0; i < str.length; i++) {
    const k = str.charCodeAt(i)
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067)
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233)
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213)
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179)
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067)
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233)
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213)
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179)
  h1 ^= h2 ^ h3 ^ h4
  h2 ^= h1
  h3 ^= h1
  h4 ^= h1
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0]
}

/** The generator's whole state: its four 32-bit words (Box–Muller here caches no spare normal). */
export type PrngWords = readonly [number, number, number, number]

const TWO_POW_26 = 67108864
const TWO_POW_53 = 9007199254740992

export class Prng {
  #s0: number
  #s1: number
  #s2: number
  #s3: number

  /** `seed`: a non-negative safe integer or any string; `stream`: the name of an independent sub-sequence. */
  constructor(seed: number | string, stream = '') {
    if (typeof seed === 'number' && !(Number.isSafeInteger(seed) && seed >= 0)) {
      throw new RangeError(`seed must be a non-negative safe integer, got ${seed}`)
    }
    const [a, b, c, d] = cyrb128(`${seed}/${stream}`)
    this.#s0 = a
    this.#s1 = b
    this.#s2 = c
    this.#s3 = d
    // xoshiro must not start from the all-zero state.
    if ((a | b | c | d) === 0) this.#s0 = 1
    // Discard the first outputs so nearby seeds decorrelate fully.
    for (let i = 0; i < 16; i++) this.nextUint32()
  }

  /** A generator that continues exactly where the one whose `words()` these are stood (a resumed simulation). */
  static fromWords(words: PrngWords): Prng {
    if (words.length !== 4 || !words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffffffff)) throw new RangeError('Prng words must be four unsigned 32-bit integers')
    if ((words[0] | words[1] | words[2] | words[3]) === 0) throw new RangeError('Prng words must not all be zero (xoshiro never reaches that state)')
    // Private fields exist only on a constructed object; the 16 discarded draws of a throwaway seed cost nothing.
    const prng = new Prng(0, 'restore')
    prng.#s0 = words[0]
    prng.#s1 = words[1]
    prng.#s2 = words[2]
    prng.#s3 = words[3]
    return prng
  }

  /** The four state words, unsigned: with fromWords() the sequence goes on from here, draw for draw. */
  words(): PrngWords {
    return [this.#s0 >>> 0, this.#s1 >>> 0, this.#s2 >>> 0, this.#s3 >>> 0]
  }

  /** Uniform integer in [0, 2^32). */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.#s1, 5), 7), 9) >>> 0
    const t = this.#s1 << 9
    this.#s2 ^= this.#s0
    this.#s3 ^= this.#s1
    this.#s1 ^= this.#s2
    this.#s0 ^= this.#s3
    this.#s2 ^= t
    this.#s3 = rotl(this.#s3, 11)
    return result
  }

  /** Uniform double in [0, 1) with 53 random bits. */
  float(): number {
    const hi = this.nextUint32() >>> 5
    const lo = this.nextUint32() >>> 6
    return (hi * TWO_POW_26 + lo) / TWO_POW_53
  }

  /** Uniform double in (0, 1]: safe under log(). */
  floatOpenZero(): number {
    return 1 - this.float()
  }

  /** Uniform integer in [min, max] (inclusive). */
  int(min: number, max: number): number {
    return min + Math.floor(this.float() * (max - min + 1))
  }

  /** Standard normal by Box–Muller (two uniforms per draw, no cached state). */
  normal(): number {
    const u1 = this.floatOpenZero()
    const u2 = this.float()
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2)
  }

  /** Exponential with the given mean. */
  exponential(mean: number): number {
    return -mean * Math.log(this.floatOpenZero())
  }

  /** Log-normal with the given median and log-space standard deviation. */
  logNormal(median: number, sigma: number): number {
    return median * Math.exp(sigma * this.normal())
  }

  /** Poisson count: Knuth's product method for small means, a rounded normal approximation above 30. */
  poisson(mean: number): number {
    if (!(mean > 0)) return 0
    if (mean > 30) return Math.max(0, Math.round(mean + Math.sqrt(mean) * this.normal()))
    const limit = Math.exp(-mean)
    let k = 0
    let p = this.float()
    while (p > limit) {
      k++
      p *= this.float()
    }
    return k
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.float() < p
  }
}
