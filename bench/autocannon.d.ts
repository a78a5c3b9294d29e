// autocannon ships no types; this is the part of its API the bench uses (README "API").
declare module 'autocannon' {
  interface Histogram { average: number; mean: number; stddev: number; min: number; max: number; p50: number; p90: number; p99: number; p99_9: number }
  interface Result {
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    latency: Histogram;
    requests: Histogram;
    statusCodeStats?: Record<string, { count: number }>;
  }
  interface RequestSpec { method?: string; path?: string; body?: string | Buffer; headers?: Record<string, string>; setupRequest?: (req: object, context: object) => object; onResponse?: (status: number, body: string, context: object) => void }
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    amount?: number;
    timeout?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    requests?: RequestSpec[];
  }
  interface Instance extends PromiseLike<Result> { stop(): void }
  function autocannon(options: Options): Instance;
  export default autocannon;
}
