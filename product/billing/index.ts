/**
 * The billing domain's public face for other domains (test/layers.test.ts: a domain reaches another only through its
 * index.ts): the price tiers and the judgment floor the Arena's levels and rank discount are defined against.
 */
export { ENDPOINT_PRICES, JUDGMENT_FLOOR_CREDITS, priceOf } from './pricing.ts'
