import { Type, type Static } from '@sinclair/typebox';
import { Choice } from '../../schemas/choice.ts';
import { Nullable, NullableText } from '../../schemas/text.ts';
import { EVENT_TYPES } from '../events/index.ts';
import { URL_MAX_LENGTH } from './webhooks.service.ts';

// Wire shapes of the webhook endpoints a supplier manages itself (webhook-endpoints.routes.ts).

export const DESCRIPTION_MAX_LENGTH = 500;
export const MAX_DELIVERIES_PAGE_SIZE = 1000;
export const DEFAULT_DELIVERIES_PAGE_SIZE = 100;

const Url = Type.String({
  minLength: 1, maxLength: URL_MAX_LENGTH,
  description: 'Where events are POSTed: http or https, without credentials, a port (if any) from 1 to 65535, not a loopback, private, '
    + 'link-local or otherwise reserved address, nor an IPv6 address carrying one (NAT64, 6to4, IPv4-mapped).',
});
const EventTypes = Nullable(Type.Array(Choice(EVENT_TYPES), { minItems: 1, maxItems: EVENT_TYPES.length, uniqueItems: true }),
  'The event types sent to the endpoint; null (the default): every type.');
const Description = NullableText(DESCRIPTION_MAX_LENGTH, 'Free text of your own, to tell endpoints apart.');

export const WebhookEndpointPathParams = Type.Object({ endpoint_id: Type.String({ maxLength: 100, description: 'The endpoint id.' }) });
export type WebhookEndpointPathParams = Static<typeof WebhookEndpointPathParams>;

export const CreateWebhookEndpointBody = Type.Object({
  url: Url,
  events: Type.Optional(EventTypes),
  description: Type.Optional(Description),
}, { additionalProperties: false, $id: 'CreateWebhookEndpoint' });
export type CreateWebhookEndpointBody = Static<typeof CreateWebhookEndpointBody>;

export const UpdateWebhookEndpointBody = Type.Object({
  url: Type.Optional(Url),
  events: Type.Optional(EventTypes),
  description: Type.Optional(Description),
  enabled: Type.Optional(Type.Boolean({
    description: 'false stops deliveries (pending retries are dropped); true resumes them with the events recorded from then on.',
  })),
}, { additionalProperties: false, $id: 'UpdateWebhookEndpoint' });
export type UpdateWebhookEndpointBody = Static<typeof UpdateWebhookEndpointBody>;

const endpointFields = {
  id: Type.String({ description: 'The endpoint id.' }),
  url: Type.String(),
  events: EventTypes,
  description: Nullable(Type.String()),
  enabled: Type.Boolean({ description: 'false: disabled (over the API, by the service team, or after a 410 Gone answer).' }),
  created_at: Type.String({ description: 'UTC, YYYY-MM-DDTHH:MM:SSZ.' }),
};

export const WebhookEndpoint = Type.Object(endpointFields, { $id: 'WebhookEndpoint' });
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

export const WebhookEndpointList = Type.Array(WebhookEndpoint, { description: 'The organisation\'s endpoints, oldest first.' });
export type WebhookEndpointList = Static<typeof WebhookEndpointList>;

const Secret = Type.String({ description: 'The signing secret (Standard Webhooks, `whsec_…`). Shown in this answer only: keep it.' });

export const CreatedWebhookEndpoint = Type.Object({ ...endpointFields, secret: Secret }, { $id: 'CreatedWebhookEndpoint' });
export type CreatedWebhookEndpoint = Static<typeof CreatedWebhookEndpoint>;

export const RotatedWebhookSecret = Type.Object({
  ...endpointFields,
  secret: Secret,
  previous_secret_expires_at: Type.String({
    description: 'Until this time (UTC) deliveries are signed with the previous secret too, so that receivers still using it go on verifying.',
  }),
}, { $id: 'RotatedWebhookSecret' });
export type RotatedWebhookSecret = Static<typeof RotatedWebhookSecret>;

export const PingEvent = Type.Object({
  id: Type.String({ description: 'The event id, also the delivery\'s `webhook-id`.' }),
  type: Type.Literal('ping'),
  created_at: Type.String({ description: 'UTC, YYYY-MM-DDTHH:MM:SSZ.' }),
  import_supplier: Type.Null(),
  external_account_number: Type.Null(),
  data: Type.Object({}, { additionalProperties: false }),
}, { $id: 'PingEvent' });
export type PingEvent = Static<typeof PingEvent>;

export const DeliveriesQuery = Type.Object({
  page_size: Type.Optional(Type.Integer({
    minimum: 1, maximum: MAX_DELIVERIES_PAGE_SIZE, format: 'int32',
    description: `Attempts per page (default ${DEFAULT_DELIVERIES_PAGE_SIZE}); the next page is in the Link header.`,
  })),
  cursor: Type.Optional(Type.String({ maxLength: 200, description: 'The cursor of the next page, from the Link header.' })),
}, { additionalProperties: false });
export type DeliveriesQuery = Static<typeof DeliveriesQuery>;

export const WebhookDelivery = Type.Object({
  event_id: Type.String({ description: 'The event delivered (the `webhook-id` header).' }),
  event_type: Type.String({ description: 'Its type; `ping` for a test.' }),
  attempt: Type.Integer({ description: '1 for the first attempt, then each retry.' }),
  status_code: Nullable(Type.Integer({ description: 'The HTTP status answered; null when there was no answer.' })),
  latency_ms: Nullable(Type.Integer({ description: 'Milliseconds until the answer (or the failure).' })),
  error: Nullable(Type.String({ description: 'Why the attempt failed (`HTTP 503`, `connect ECONNREFUSED …`, a refused address); null when delivered.' })),
  at: Type.String({ description: 'When the attempt was made (UTC, YYYY-MM-DDTHH:MM:SSZ).' }),
}, { $id: 'WebhookDelivery' });
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const WebhookDeliveryList = Type.Array(WebhookDelivery, { description: 'Attempts, newest first.' });
export type WebhookDeliveryList = Static<typeof WebhookDeliveryList>;
