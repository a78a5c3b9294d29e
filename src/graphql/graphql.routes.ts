import { Type, type Static } from '@sinclair/typebox';
import type { FastifyError, FastifyPluginAsync, FastifyReply } from 'fastify';
import { execute, getOperationAST, GraphQLError, parse, specifiedRules, validate, type DocumentNode, type ExecutionResult } from 'graphql';
import { AppError } from '../core/errors.ts';
import { NullableText, RequiredText } from '../schemas/text.ts';
import { logFailure, toAppError } from '../http/error-handler.ts';
import { noteErrorCode } from '../http/request-log.ts';
import { answer } from '../http/openapi.ts';
import type { ServiceDeps } from '../http/route-deps.ts';
import type { TokenService } from '../modules/auth/index.ts';
import { GRAPHQL_ANSWERS, OBTAIN_TOKEN } from './graphql.examples.ts';
import { createAuthThrottle } from '../modules/auth/index.ts';
import { limitOperationsAndAliases, nestingError } from './graphql.limits.ts';
import { graphqlSchema, type GraphqlContext } from './graphql.schema.ts';

// POST /graphql (D3), GraphQL over HTTP with JSON bodies. Every answer, including a malformed
// request, is a GraphQL response body `{data?, errors?}` whose errors carry `extensions.code` in
// the service's vocabulary: 400 for a request that cannot run (bad envelope, syntax, validation),
// 200 once it ran (a bad key is `data.obtainToken: null` plus an `authentication_failed` error).
export const GraphqlRequest = Type.Object({
  query: RequiredText(100_000, { description: 'The GraphQL document.' }),
  operationName: Type.Optional(NullableText(200)),
  variables: Type.Optional(Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'] })),
  extensions: Type.Optional(Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'] })),
}, { $id: 'GraphqlRequest', additionalProperties: false, description: 'A GraphQL request: the document, and its variables.' });
export type GraphqlRequest = Static<typeof GraphqlRequest>;

const GraphqlErrorItem = Type.Object({
  message: Type.String(),
  locations: Type.Optional(Type.Array(Type.Object({ line: Type.Integer(), column: Type.Integer() }))),
  path: Type.Optional(Type.Array(Type.Union([Type.String(), Type.Integer()]))),
  extensions: Type.Object({ code: Type.String() }, { additionalProperties: true }),
}, { additionalProperties: true });

export const GraphqlResponse = Type.Object({
  data: Type.Optional(Type.Unknown({ description: 'The result; `{"obtainToken": null}` when the mutation failed.' })),
  errors: Type.Optional(Type.Array(GraphqlErrorItem)),
}, { $id: 'GraphqlResponse', additionalProperties: true, description: 'A GraphQL response: `data`, and `errors` whose `extensions.code` is one of the service\'s error codes.' });
export type GraphqlResponse = Static<typeof GraphqlResponse>;

const DESCRIPTION = [
  'Issues tokens: the `obtainToken` mutation trades an organisation API key, or a refresh token, for a token and a refresh token.',
  '`input` takes exactly one of `APIKey` or `refreshToken`. A bad, revoked or expired credential answers 200 with',
  '`data.obtainToken` null and an error whose `extensions.code` is `authentication_failed` or `token_expired`.',
  'Send the token as `Authorization: Token <token>` on every REST call. Put the demo API key, printed at the first start, in the example.',
].join(' ');

// A token request is a few dozen tokens; introspection a few hundred. More is not a real client.
const MAX_TOKENS = 5_000;

export const graphqlRoutes: FastifyPluginAsync<Omit<ServiceDeps, 'queue'> & { tokens: TokenService }> = async (app, { tokens, db, config, clock }) => {
  const throttle = createAuthThrottle({ db, clock }, { perAddress: config.authFailuresPerAddress, perKeyPrefix: config.authFailuresPerKey });

  // Failures before the handler runs (body limit, media type, unparsable JSON, a lost store) are
  // mapped by the one mapper of the REST routes and answered in the GraphQL shape; this handler is
  // scoped to this plugin.
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    const failure = toAppError(error);
    logFailure(request, error, failure);
    void reply.headers(failure.headers ?? {});
    return sendErrors(reply, failure.status, [graphqlError(failure.detail, failure.code)]);
  });

  app.post('/graphql', {
    attachValidation: true,
    schema: {
      tags: ['Authentication'],
      operationId: 'obtainToken',
      summary: 'GraphQL: obtain a token',
      description: DESCRIPTION,
      security: [],
      body: GraphqlRequest,
      requestExample: OBTAIN_TOKEN,
      response: {
        200: answer(GraphqlResponse, 'The request ran: the token pair, or `obtainToken: null` and an `authentication_failed` or `token_expired` error.', GRAPHQL_ANSWERS[200]),
        400: answer(GraphqlResponse, 'The request could not run; each error\'s `extensions.code` is one of `invalid`, `parse_error`.', GRAPHQL_ANSWERS[400]),
        413: answer(GraphqlResponse, 'The body is larger than the body limit (`payload_too_large`).', GRAPHQL_ANSWERS[413]),
        415: answer(GraphqlResponse, 'The body is not `application/json` (`unsupported_media_type`).', GRAPHQL_ANSWERS[415]),
        500: answer(GraphqlResponse, 'An unexpected failure (`internal_error`), logged with the request id.', GRAPHQL_ANSWERS[500]),
        503: answer(GraphqlResponse, 'The service or its database is unavailable for a moment (`service_unavailable`); retry shortly.', GRAPHQL_ANSWERS[503]),
        429: answer(GraphqlResponse, 'Too many failed authentications from this address, or with this API key, in the last minute '
          + '(`too_many_requests`): the credential was not checked. Retry after `Retry-After` seconds.', {
          data: { obtainToken: null },
          errors: [{ message: 'Too many failed authentications from this address; retry in 42 seconds.', locations: [{ line: 1, column: 12 }], path: ['obtainToken'], extensions: { code: 'too_many_requests' } }],
        }, { 'Retry-After': { type: 'integer', description: 'Seconds to wait before trying again.' } }),
      },
    },
  }, async (request, reply) => {
    if (request.validationError) {
      const items = request.validationError instanceof AppError ? request.validationError.errors ?? [] : [];
      const errors = items.length > 0
        ? items.map((item) => item.attr === 'non_field_errors'
          ? graphqlError(`The body must be a JSON object with a "query" string: ${item.detail}`, item.code)
          : graphqlError(`${item.attr}: ${item.detail}`, item.code, { attr: item.attr }))
        : [graphqlError('The body must be a JSON object with a "query" string.', 'invalid')];
      return sendErrors(reply, 400, errors);
    }
    const body = request.body as GraphqlRequest;

    let document: DocumentNode;
    try {
      const tooDeep = nestingError(body.query, MAX_TOKENS);
      if (tooDeep) return sendErrors(reply, 400, [withCode(tooDeep, 'parse_error')]);
      document = parse(body.query, { maxTokens: MAX_TOKENS });
    } catch (error) {
      if (error instanceof GraphQLError) return sendErrors(reply, 400, [withCode(error, 'parse_error')]);
      throw error;
    }
    const invalid = validate(graphqlSchema, document, [...specifiedRules, limitOperationsAndAliases], { maxErrors: 20 });
    if (invalid.length > 0) return sendErrors(reply, 400, invalid.map((e) => withCode(e, 'invalid')));
    // graphql-js answers a subscription, with no subscription type, as a result with null data: a
    // request error here, like any other operation the schema cannot run.
    if (getOperationAST(document, body.operationName ?? undefined)?.operation === 'subscription') {
      return sendErrors(reply, 400, [graphqlError('This service offers no subscriptions: send the obtainToken mutation, or a query.', 'invalid')]);
    }

    const context: GraphqlContext = { tokens, throttle, address: request.ip };
    const result: ExecutionResult = await execute({
      schema: graphqlSchema,
      document,
      operationName: body.operationName ?? null,
      variableValues: body.variables ?? null,
      contextValue: context,
    });
    // The failed-authentication throttle refused (graphql.schema.ts): 429 with Retry-After, same body shape.
    if (context.retryAfter !== undefined) void reply.header('Retry-After', context.retryAfter);
    const errors = result.errors?.map((error) => {
      if (typeof error.extensions.code === 'string') return error;
      // A resolver failed in a way no one expected: log it with the request id, tell the client nothing more.
      if (error.originalError && !(error.originalError instanceof GraphQLError)) {
        request.log.error({ err: error.originalError }, 'graphql resolver failed');
        return new GraphQLError('An unexpected error occurred. It has been logged with this request id.', {
          ...(error.path ? { path: error.path } : {}), extensions: { code: 'internal_error' },
        });
      }
      return withCode(error, 'invalid'); // variables that do not fit, an unknown operationName
    });
    // No data at all means the request could not run: a request error (GraphQL over HTTP).
    const status = result.data === undefined ? 400 : context.retryAfter !== undefined ? 429 : 200;
    const code = errors?.[0]?.extensions.code;
    // A refused key answers 200: its code still goes on the request's log line.
    if (typeof code === 'string') noteErrorCode(request, code);
    return reply.code(status).send({
      ...(result.data !== undefined ? { data: result.data } : {}),
      ...(errors ? { errors: errors.map((e) => e.toJSON()) } : {}),
    });
  });
};

function graphqlError(message: string, code: string, extra: Record<string, unknown> = {}): GraphQLError {
  return new GraphQLError(message, { extensions: { code, ...extra } });
}

function withCode(error: GraphQLError, code: string): GraphQLError {
  return new GraphQLError(error.message, {
    ...(error.nodes ? { nodes: error.nodes } : {}),
    ...(error.source ? { source: error.source } : {}),
    ...(error.positions ? { positions: error.positions } : {}),
    ...(error.path ? { path: error.path } : {}),
    extensions: { ...error.extensions, code },
  });
}

function sendErrors(reply: FastifyReply, status: number, errors: GraphQLError[]) {
  const code = errors[0]?.extensions.code;
  if (typeof code === 'string') noteErrorCode(reply.request, code);
  return reply.code(status).send({ errors: errors.map((e) => e.toJSON()) });
}
