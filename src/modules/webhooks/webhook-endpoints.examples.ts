import type {
  CreatedWebhookEndpoint, CreateWebhookEndpointBody, PingEvent, RotatedWebhookSecret, UpdateWebhookEndpointBody, WebhookDeliveryList,
  WebhookEndpoint,
} from './webhook-endpoints.schemas.ts';

// OpenAPI examples of the webhook endpoints: one endpoint's life, from creation to its delivery log.

const ID = 'wh_3f9c1a7e5b2d4c60';

export const CREATE_ENDPOINT: CreateWebhookEndpointBody = {
  url: 'https://hooks.acme.example/migration',
  events: ['import_process.completed', 'import_process.failed'],
  description: 'Migration night receiver',
};

export const ENDPOINT: WebhookEndpoint = {
  id: ID, url: CREATE_ENDPOINT.url, events: CREATE_ENDPOINT.events!, description: CREATE_ENDPOINT.description!,
  enabled: true, created_at: '2025-03-04T10:00:00Z',
};

export const CREATED_ENDPOINT: CreatedWebhookEndpoint = { ...ENDPOINT, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/ld8a0IuUEc=' };

export const UPDATE_ENDPOINT: UpdateWebhookEndpointBody = { events: null, description: 'Every event, for the audit log' };

export const UPDATED_ENDPOINT: WebhookEndpoint = { ...ENDPOINT, events: null, description: UPDATE_ENDPOINT.description! };

export const ROTATED_SECRET: RotatedWebhookSecret = {
  ...ENDPOINT, secret: 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD3ZdOwt3bM3s=', previous_secret_expires_at: '2025-03-05T11:00:00Z',
};

export const PING: PingEvent = {
  id: '4712', type: 'ping', created_at: '2025-03-04T11:05:00Z', import_supplier: null, external_account_number: null, data: {},
};

export const DELIVERIES: WebhookDeliveryList = [
  { event_id: '4712', event_type: 'ping', attempt: 1, status_code: 200, latency_ms: 84, error: null, at: '2025-03-04T11:05:01Z' },
  { event_id: '4711', event_type: 'import_process.completed', attempt: 2, status_code: 200, latency_ms: 91, error: null, at: '2025-03-04T10:15:06Z' },
  { event_id: '4711', event_type: 'import_process.completed', attempt: 1, status_code: 503, latency_ms: 12, error: 'HTTP 503', at: '2025-03-04T10:15:01Z' },
];

export const ENDPOINT_NOT_FOUND = { detail: `No webhook endpoint "${ID}".`, code: 'not_found' };
export const ENDPOINT_DISABLED = {
  detail: `Webhook endpoint "${ID}" is disabled (receiver moving to a new host): enable it (PATCH "enabled": true) to send it a ping.`,
  code: 'webhook_endpoint_disabled',
};

const PRIVATE = 'Webhooks cannot be delivered to 10.0.0.1: it is a private address.';
export const URL_NOT_ALLOWED = { detail: PRIVATE, code: 'webhook_url_not_allowed', errors: [{ detail: PRIVATE, code: 'webhook_url_not_allowed', attr: 'url' }] };

export { BAD_CURSOR } from '../../core/cursor.ts';

export const ID_TOO_LONG = { detail: 'The request failed validation.', code: 'invalid', errors: [
  { detail: 'Ensure this field has no more than 100 characters.', code: 'max_length', attr: 'endpoint_id' }] };

const UNKNOWN = 'This field is not part of the documented payload and must not be sent.';
export const UNKNOWN_QUERY = { detail: 'The request failed validation.', code: 'invalid', errors: [{ detail: UNKNOWN, code: 'unknown_field', attr: 'page' }] };

