// The webhooks module's surface: the endpoint services import-admin shares with the API, the
// fan-out trigger given to createEvents at start-up, the queues and workers, the routes.
export { webhookEndpointsRoutes } from './webhook-endpoints.routes.ts';
export { createFanoutTrigger } from './webhook-fanout.ts';
export * from './webhooks.service.ts';
export { defineWebhookQueues, startWebhookWorkers } from './webhooks.worker.ts';
