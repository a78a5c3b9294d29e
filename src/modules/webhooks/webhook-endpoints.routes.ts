import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { ServiceDeps } from '../../http/route-deps.ts';
import { answer, LINK_NEXT, refusal } from '../../http/openapi.ts';
import {
  BAD_CURSOR, CREATE_ENDPOINT, CREATED_ENDPOINT, DELIVERIES, ENDPOINT, ENDPOINT_DISABLED, ENDPOINT_NOT_FOUND, ID_TOO_LONG, PING, ROTATED_SECRET,
  UNKNOWN_QUERY, UPDATE_ENDPOINT, UPDATED_ENDPOINT, URL_NOT_ALLOWED,
} from './webhook-endpoints.examples.ts';
import {
  CreatedWebhookEndpoint, CreateWebhookEndpointBody, DEFAULT_DELIVERIES_PAGE_SIZE, DeliveriesQuery, PingEvent, RotatedWebhookSecret,
  UpdateWebhookEndpointBody, WebhookDeliveryList, WebhookEndpoint, WebhookEndpointList, WebhookEndpointPathParams,
} from './webhook-endpoints.schemas.ts';
import * as endpoints from './webhook-endpoints.service.ts';

const TAGS = ['Webhooks'];
const NO_ENDPOINT = refusal(['not_found'], ENDPOINT_NOT_FOUND, { note: 'No such endpoint of the caller\'s organisation.' });
const BAD_PATH_NOTE = '`invalid`: the endpoint id is longer than 100 characters; `bad_url`: the path holds a malformed percent-escape.';
const BAD_PATH = refusal(['invalid', 'bad_url'], ID_TOO_LONG, { note: BAD_PATH_NOTE });
const URL_REFUSED_NOTE = '`webhook_url_not_allowed`: the URL is not http(s), carries credentials, or names (or resolves to) a loopback, '
  + 'private, link-local or otherwise reserved address.';

// The webhook endpoints of the caller's organisation: the supplier manages them itself (the service
// team's import-admin webhook commands manage the same endpoints).
export const webhookEndpointsRoutes: FastifyPluginAsync<ServiceDeps> = async (plugin, { db, queue, config, clock }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const deps: endpoints.EndpointsDeps = { db, queue, allowPrivateNetworks: config.webhookAllowPrivateNetworks, clock };

  app.post('/webhook-endpoints/', {
    schema: {
      tags: TAGS, operationId: 'createWebhookEndpoint', summary: 'Create a webhook endpoint',
      description: 'The organisation\'s events of every supplier, recorded from now on, are POSTed to the URL, signed as the Standard '
        + 'Webhooks specification says with the secret of this answer (shown only here: keep it). Without `events`, every type is sent.',
      body: CreateWebhookEndpointBody,
      requestExample: CREATE_ENDPOINT,
      response: {
        201: answer(CreatedWebhookEndpoint, 'The endpoint, with its signing secret.', CREATED_ENDPOINT),
        400: refusal(['invalid', 'webhook_url_not_allowed'], URL_NOT_ALLOWED, { note: URL_REFUSED_NOTE }),
      },
    },
  }, async (request, reply) => reply.code(201).send(await endpoints.createEndpoint(deps, callerOf(request), request.body)));

  app.get('/webhook-endpoints/', {
    schema: {
      tags: TAGS, operationId: 'listWebhookEndpoints', summary: 'The organisation\'s webhook endpoints',
      description: 'Every endpoint of the caller\'s organisation, oldest first, without secrets.',
      querystring: Type.Object({}, { additionalProperties: false }),
      response: { 200: answer(WebhookEndpointList, 'The endpoints.', [ENDPOINT]), 400: refusal(['invalid'], UNKNOWN_QUERY, { note: 'The operation takes no query parameter.' }) },
    },
  }, async (request) => endpoints.listEndpoints(db, callerOf(request)));

  app.get('/webhook-endpoints/:endpoint_id/', {
    schema: {
      tags: TAGS, operationId: 'getWebhookEndpoint', summary: 'A webhook endpoint',
      description: 'The endpoint, without its secret.',
      params: WebhookEndpointPathParams,
      response: { 200: answer(WebhookEndpoint, 'The endpoint.', ENDPOINT), 400: BAD_PATH, 404: NO_ENDPOINT },
    },
  }, async (request) => endpoints.getEndpoint(db, callerOf(request), request.params.endpoint_id));

  app.patch('/webhook-endpoints/:endpoint_id/', {
    schema: {
      tags: TAGS, operationId: 'updateWebhookEndpoint', summary: 'Change a webhook endpoint',
      description: 'Only the fields sent change. `enabled: false` stops deliveries and drops pending retries; `enabled: true` resumes '
        + 'them with the events recorded from then on (read what was missed from the events feed).',
      params: WebhookEndpointPathParams,
      body: UpdateWebhookEndpointBody,
      requestExample: UPDATE_ENDPOINT,
      response: {
        200: answer(WebhookEndpoint, 'The endpoint as it is now.', UPDATED_ENDPOINT),
        400: refusal(['invalid', 'webhook_url_not_allowed', 'bad_url'], URL_NOT_ALLOWED, { note: `${URL_REFUSED_NOTE} ${BAD_PATH_NOTE}` }),
        404: NO_ENDPOINT,
      },
    },
  }, async (request) => endpoints.updateEndpoint(deps, callerOf(request), request.params.endpoint_id, request.body));

  app.delete('/webhook-endpoints/:endpoint_id/', {
    schema: {
      tags: TAGS, operationId: 'deleteWebhookEndpoint', summary: 'Delete a webhook endpoint',
      description: 'The endpoint, its delivery log and its pending deliveries are gone.',
      params: WebhookEndpointPathParams,
      response: { 204: answer(Type.Null(), 'Deleted.'), 400: BAD_PATH, 404: NO_ENDPOINT },
    },
  }, async (request, reply) => {
    await endpoints.deleteEndpoint(db, callerOf(request), request.params.endpoint_id);
    return reply.code(204).send(null);
  });

  app.post('/webhook-endpoints/:endpoint_id/rotate-secret/', {
    schema: {
      tags: TAGS, operationId: 'rotateWebhookSecret', summary: 'Give a webhook endpoint a new secret',
      description: `The new secret signs every delivery from now on; for ${endpoints.ROTATION_OVERLAP_HOURS} hours the previous one signs `
        + 'beside it (two signatures in `webhook-signature`), so receivers verify with either while they switch. A rotation within '
        + 'that time ends the oldest secret at once.',
      params: WebhookEndpointPathParams,
      response: { 200: answer(RotatedWebhookSecret, 'The endpoint with its new secret (shown only here).', ROTATED_SECRET), 400: BAD_PATH, 404: NO_ENDPOINT },
    },
  }, async (request) => endpoints.rotateSecret(deps, callerOf(request), request.params.endpoint_id));

  app.post('/webhook-endpoints/:endpoint_id/test/', {
    schema: {
      tags: TAGS, operationId: 'testWebhookEndpoint', summary: 'Send a ping event to a webhook endpoint',
      description: 'A `ping` event (no supplier, no account, empty data) is delivered to this endpoint only, whatever its event types, '
        + 'signed and retried like any event; its attempts appear in the delivery log. A disabled endpoint is sent none: '
        + '400 `webhook_endpoint_disabled`, with its reason.',
      params: WebhookEndpointPathParams,
      response: {
        202: answer(PingEvent, 'The ping is queued for delivery; this is its body.', PING),
        400: refusal(['webhook_endpoint_disabled', 'invalid', 'bad_url'], ENDPOINT_DISABLED, {
          note: `\`webhook_endpoint_disabled\`: the endpoint is disabled (by you, the service team, or a 410 answer); enable it first. ${BAD_PATH_NOTE}`,
        }),
        404: NO_ENDPOINT,
      },
    },
  }, async (request, reply) => reply.code(202).send(await endpoints.sendPing(deps, callerOf(request), request.params.endpoint_id)));

  app.get('/webhook-endpoints/:endpoint_id/deliveries/', {
    schema: {
      tags: TAGS, operationId: 'listWebhookDeliveries', summary: 'A webhook endpoint\'s delivery attempts, newest first',
      description: `Every attempt of the last 30 days or more: event, type, attempt, status, latency, error and time. Keyset paging: \`page_size\` (default ${DEFAULT_DELIVERIES_PAGE_SIZE}), `
        + 'then follow the `Link` header (`cursor`).',
      params: WebhookEndpointPathParams,
      querystring: DeliveriesQuery,
      response: {
        200: answer(WebhookDeliveryList, 'One page of attempts, newest first.', DELIVERIES, { Link: LINK_NEXT }),
        400: refusal(['invalid', 'bad_url'], BAD_CURSOR, {
          note: `\`invalid\`: a query parameter is out of its bounds, or the cursor is not one the service gave. ${BAD_PATH_NOTE}`,
        }),
        404: NO_ENDPOINT,
      },
    },
  }, async (request, reply) => {
    const page = await endpoints.deliveriesPage(db, callerOf(request), request.params.endpoint_id, request.query);
    if (page.nextCursor) {
      const path = request.url.split('?')[0];
      const size = request.query.page_size ?? DEFAULT_DELIVERIES_PAGE_SIZE;
      void reply.header('link', `<${path}?page_size=${size}&cursor=${page.nextCursor}>; rel="next"`);
    }
    return page.deliveries;
  });
};
