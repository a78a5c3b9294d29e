// The webhooks module's surface: the endpoint services import-admin shares with the API, the
// fan-out (built once at start-up; events wake it by a trigger in the database), the queues and workers, the routes;
// for the tests, one HTTP attempt, one delivery attempt or a batch of them as a worker makes it (with its connection pools), the retry
// schedule, the address rule, the retention run and the OpenAPI examples.
export { blockedReason, HOST_CHECK_TIMEOUT_MS, hostRefusal } from './ssrf-guard.ts';
export { runRetention } from './retention.job.ts';
export { deliverBatch, deliverOnce, MAX_ATTEMPTS, retryDelayMs } from './webhook-delivery.ts';
export { ENDPOINT, UPDATED_ENDPOINT } from './webhook-endpoints.examples.ts';
export { webhookEndpointsRoutes } from './webhook-endpoints.routes.ts';
export { createWebhookFanout, FANOUT_QUEUE, GATHER_SECONDS, type WebhookFanout } from './webhook-fanout.ts';
export * from './webhooks.service.ts';
export { createDeliveryAgents, PARALLEL_ATTEMPTS, postWebhook } from './webhook-http.ts';
export { defineWebhookQueues, startWebhookWorkers } from './webhooks.worker.ts';
