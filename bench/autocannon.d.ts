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
  }
  function autocannon(options: Options): Promise<Result>
  export default autocannon
}
