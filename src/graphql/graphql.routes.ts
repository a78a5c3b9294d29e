import { Type, type Static } from '@sinclair/typebox';
import type { FastifyError, FastifyPluginAsync, FastifyReply } from 'fastify';
import { execute, GraphQLError, parse, specifiedRules, validate, type DocumentNode, type ExecutionResult } from 'graphql';
import { AppError } from '../core/errors.ts';
import { toAppError } from '../http/error-handler.ts';
import type { RouteDeps } from '../http/route-deps.ts';
import { graphqlSchema, type GraphqlContext } from './graphql.schema.ts';

// POST /graphql (D3), GraphQL over HTTP with JSON bodies. Every answer, including a malformed
// request, is a GraphQL response body `{data?, errors?}` whose errors carry `extensions.code` in
// the service's vocabulary: 400 for a request that cannot run (bad envelope, syntax, validation),
// 200 once it ran (a bad key is `data.obtainToken: null` plus an `authentication_failed` error).
export const GraphqlRequest = Type.Object({
  query: Type.String({ minLength: 1, maxLength: 100_000, description: 'The GraphQL document.' }),
  operationName: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: 200 })),
  variables: Type.Optional(Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'] })),
  extensions: Type.Optional(Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'] })),
}, { additionalProperties: false });
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
}, { additionalProperties: true });
export type GraphqlResponse = Static<typeof GraphqlResponse>;

const DESCRIPTION = [
  'Issues tokens (D3). Example body:',
  '`{"query": "mutation ObtainToken { obtainToken(input: {APIKey: \\"ak_...\\"}) { token expiresIn refreshToken refreshExpiresIn } }"}`.',
  '`input` takes exactly one of `APIKey` or `refreshToken`. A bad, revoked or expired credential answers 200 with',
  '`data.obtainToken` null and an error whose `extensions.code` is `authentication_failed` or `token_expired`.',
].join(' ');

// A token request is a few dozen tokens; introspection a few hundred. More is not a real client.
const MAX_TOKENS = 5_000;

export const graphqlRoutes: FastifyPluginAsync<RouteDeps> = async (app, { tokens }) => {
  const context: GraphqlContext = { tokens };

  // Failures before the handler runs (body limit, media type, unparsable JSON, a lost store) are
  // mapped by the one mapper of the REST routes and answered in the GraphQL shape; this handler is
  // scoped to this plugin.
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    const failure = toAppError(error);
    if (failure.status >= 500) request.log.error({ err: error }, 'graphql request failed');
    void reply.headers(failure.headers ?? {});
    return sendErrors(reply, failure.status, [graphqlError(failure.detail, failure.code)]);
  });

  app.post('/graphql', {
    attachValidation: true,
    schema: {
      tags: ['auth'],
      summary: 'GraphQL: obtain a token',
      description: DESCRIPTION,
      security: [],
      body: GraphqlRequest,
      response: { 200: GraphqlResponse, 400: GraphqlResponse, 413: GraphqlResponse, 415: GraphqlResponse },
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
      document = parse(body.query, { maxTokens: MAX_TOKENS });
    } catch (error) {
      if (error instanceof GraphQLError) return sendErrors(reply, 400, [withCode(error, 'parse_error')]);
      throw error;
    }
    const invalid = validate(graphqlSchema, document, specifiedRules, { maxErrors: 20 });
    if (invalid.length > 0) return sendErrors(reply, 400, invalid.map((e) => withCode(e, 'invalid')));

    const result: ExecutionResult = await execute({
      schema: graphqlSchema,
      document,
      operationName: body.operationName ?? null,
      variableValues: body.variables ?? null,
      contextValue: context,
    });
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
    const status = result.data === undefined ? 400 : 200;
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
  return reply.code(status).send({ errors: errors.map((e) => e.toJSON()) });
}
