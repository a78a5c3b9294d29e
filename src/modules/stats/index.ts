// The stats module's surface: the figures /metrics shows for every supplier (http/domain-metrics.ts
// only makes them gauges), and the routes.
export * from './stats-metrics.service.ts';
export { statsRoutes } from './stats.routes.ts';
