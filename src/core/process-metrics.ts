import { Histogram, Registry } from 'prom-client';

// Metrics of this process's own work (what no store query can tell afterwards), for /metrics beside
// the store-derived gauges of http/domain-metrics.ts. Module-level: a process has one of each, and
// every app built in it (tests build several) shows the same.
export const processMetrics = new Registry();

export const vendorLatency = new Histogram({
  name: 'payment_vendor_request_duration_seconds',
  help: 'Payment vendor look-ups, including in-request retries, by vendor code and outcome',
  labelNames: ['vendor', 'outcome'],
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [processMetrics],
});
