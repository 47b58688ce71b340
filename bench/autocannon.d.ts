/** The slice of autocannon's API the benches use (the package ships no types and @types/autocannon is not installed). */
declare module 'autocannon' {
  interface Histogram {
    average: number
    p50: number
    p99: number
  }
  interface Result {
    requests: Histogram
    latency: Histogram
    non2xx: number
    errors: number
    timeouts: number
  }
  interface Options {
    url: string
    connections?: number
    duration?: number
    pipelining?: number
    workers?: number
    method?: 'GET' | 'POST'
    body?: string
    headers?: Record<string, string>
    /** Cycled through in order by each connection (bench/cluster.ts: one request per payer). */
    requests?: Array<{ method?: 'GET' | 'POST'; path?: string; headers?: Record<string, string>; body?: string }>
  }
  function autocannon(options: Options): Promise<Result>
  export default autocannon
}
