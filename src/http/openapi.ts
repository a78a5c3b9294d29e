import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { readFileSync } from 'node:fs';
import { ErrorBody } from '../schemas/error-body.ts';
import { ANSWER, type AnswerDoc, COMMON_ANSWERS, describedAnswer } from './openapi-answers.ts';
import { isGuardedPath } from './auth.ts';
import { setPageHeaders } from './page-headers.ts';

// The OpenAPI document (/openapi.json, /docs) is generated from the routes' own TypeBox schemas: the
// schema that validates a body is the one documented. A schema with an `$id` is the named component
// `#/components/schemas/<$id>`: nested ones through @fastify/swagger's ref resolver, route roots
// through the transform below. What a schema cannot say (what each answer means, examples) the
// routes give with `answer`, `refusal` (openapi-answers.ts) and `requestExample`.

export { answer, badPathParameter, LINK_NEXT, refusal, RETRY_AFTER } from './openapi-answers.ts';

declare module 'fastify' {
  interface FastifySchema {
    /** The request body example of the operation: it must succeed against the demo data. */
    requestExample?: unknown;
  }
}

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
export const API_TITLE = 'Account migration import API';

const API_DESCRIPTION = [
  'Moves supplier accounts into the service: validate and stage account data, create the account, then import its notes,',
  'transactions, historical statements and payment instruction; or move a whole book of accounts with a migration job.',
  '',
  '**Authentication.** Trade an organisation API key for a token with the `obtainToken` mutation of `POST /graphql`, then send',
  '`Authorization: Token <token>` on every `/v1/data-import/` call. The first start of a fresh service creates a demo organisation',
  '(import supplier `DEMO`, operations team `Operations`) and prints its API key: the examples of this document work against it,',
  'in the order of the operations (validate, stage, create, then the imported data).',
  '',
  '**Errors** are JSON: `{"detail": "...", "code": "...", "errors": [{"detail", "code", "attr"}]}`. `code` is stable and',
  'machine-readable; `detail` is for people and may change; `errors` lists field problems, `attr` being the dot path of the',
  'field (`customers.0.mobile`). Undocumented fields are refused (`unknown_field`), every string and list has a documented',
  'bound, and numbers are not coerced from strings.',
].join('\n');

const TAGS = [
  { name: 'Authentication', description: 'Tokens for the REST interface, from an API key or a refresh token.' },
  { name: 'Account import', description: 'Validate, stage and create accounts; follow their import.' },
  { name: 'Imported data', description: 'History imported onto a created account: notes, transactions, statements, payment instruction.' },
  { name: 'Accounts', description: 'What an import created, as the service holds it.' },
  { name: 'Events', description: 'What happened, in commit order, for polling clients (webhooks push the same events).' },
  { name: 'Webhooks', description: 'Endpoints the organisation\'s events are pushed to, signed; their secrets, test pings and delivery logs.' },
  { name: 'Migration jobs', description: 'A whole book of accounts in one upload, worked through in the background.' },
  { name: 'Statistics', description: 'A supplier\'s migration at a glance (the data of the dashboard).' },
];

/** Keywords of the service's validator: meaningless to an API user, left out of the document. */
const INTERNAL_KEYWORDS = ['x-rules', 'x-error-code', 'x-attr-name'];

interface Examples { request?: unknown; responses: Record<string, unknown> }
type SchemaObject = Record<string | symbol, unknown>;

/**
 * Swagger UI's page: its scripts are files of its own ('self', no inline script, no eval), but it
 * writes style attributes and <style> elements into the page ('unsafe-inline' styles, which run no
 * code) and draws its icons as data: images. "Try it out" calls this service only.
 */
export const DOCS_CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
  + "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/**
 * Registers @fastify/swagger (OpenAPI 3.1, so TypeBox's JSON Schema 2020-12 needs no conversion), the
 * docs UI at /docs and /openapi.json.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  const components: Record<string, unknown> = { [ErrorBody.$id!]: ErrorBody };
  const examples = new Map<string, Examples>();

  // A named schema used only at a route's root is nested nowhere, so the ref resolver never sees it:
  // listed here, it becomes a component like the others.
  app.addHook('onRoute', (route) => {
    const schema = route.schema as FastifySchema | undefined;
    if (!schema || schema.hide) return;
    for (const root of [schema.body, ...Object.values(schema.response ?? {})] as Array<SchemaObject | undefined>) {
      const unwrapped = ((root?.[ANSWER] as AnswerDoc | undefined)?.schema ?? root) as SchemaObject | undefined;
      for (const candidate of [unwrapped, ...mediaSchemas(unwrapped)]) {
        if (typeof candidate?.$id === 'string') components[candidate.$id] = candidate;
      }
    }
  });

  const options: FastifyDynamicSwaggerOptions = {
    openapi: {
      openapi: '3.1.0',
      info: { title: API_TITLE, version: pkg.version, description: API_DESCRIPTION, license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' } },
      servers: [{ url: '/', description: 'The service that serves this document: local, staging or production alike.', 'x-internal': false } as { url: string }],
      tags: TAGS,
      components: {
        // Read when the document is first built, after ready: every route has been seen by then.
        schemas: components as never,
        securitySchemes: {
          Token: {
            type: 'apiKey', in: 'header', name: 'Authorization',
            description: '`Token <token>`, the token from the `obtainToken` mutation of `POST /graphql`. It expires after `expiresIn` seconds; trade the refresh token for a new pair.',
          },
        },
      },
      security: [{ Token: [] }],
    },
    // Components are named by their `$id`, not def-0, def-1…: names a generated client can rely on.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform: ({ schema, url }) => {
      if (schema?.hide) return { schema, url };
      // A route the document would show without a name: the generated client and /docs need one.
      if (!schema?.operationId) throw new Error(`OpenAPI: ${url} has no operationId (or set schema.hide)`);
      const { requestExample, response, ...rest } = schema;
      const found: Examples = { request: requestExample, responses: {} };
      const responses = documentedResponses((response ?? {}) as Record<string, SchemaObject>, {
        guarded: isGuardedPath(url), jsonBody: Boolean(rest.body) && !rest.consumes,
      });
      for (const [status, doc] of responses) if (doc.example !== undefined) found.responses[status] = doc.example;
      examples.set(schema.operationId, found);
      const documented = Object.fromEntries(responses.map(([status, doc]) => [status, {
        ...referenced(doc.schema as SchemaObject), description: doc.description, ...(doc.headers ? { headers: doc.headers } : {}),
      }]));
      return { schema: { ...rest, ...(rest.body ? { body: referenced(rest.body as SchemaObject) } : {}), response: documented }, url };
    },
    transformObject: (document) => {
      const { openapiObject } = document as unknown as { openapiObject: OpenApiDoc };
      placeExamples(openapiObject.paths ?? {}, examples);
      dropKeywords(openapiObject, INTERNAL_KEYWORDS);
      mapDiscriminators(openapiObject.components?.schemas ?? {});
      return openapiObject as never;
    },
  };
  await app.register(swagger, options);
  // Every answer under /docs (the page, its scripts and styles, served by @fastify/static inside the
  // plugin) carries the page headers: the hook is inherited by everything registered beside it.
  await app.register(async (docs) => {
    docs.addHook('onRequest', async (_request, reply) => { setPageHeaders(reply, DOCS_CSP); });
    await docs.register(swaggerUi, { routePrefix: '/docs', theme: { title: `${API_TITLE} ${pkg.version}` } });
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

/** The route's answers with their descriptions, and those every operation of its kind can give. */
function documentedResponses(given: Record<string, SchemaObject>, op: { guarded: boolean; jsonBody: boolean }): Array<[string, AnswerDoc]> {
  const found = new Map(Object.entries(given).map(([status, raw]) => [status, describedAnswer(status, raw)]));
  for (const [status, make] of Object.entries(COMMON_ANSWERS)) {
    const doc = found.has(status) ? null : make(op);
    if (doc) found.set(status, doc);
  }
  return [...found].sort(([a], [b]) => a.localeCompare(b));
}

/** A named schema is referenced (`$ref` by `$id`, resolved to its component); any other stays inline. */
function referenced(schema: SchemaObject): SchemaObject {
  if (typeof schema.$id === 'string') return { $ref: schema.$id };
  if (!isObject(schema.content)) return schema;
  const content = Object.fromEntries(Object.entries(schema.content as Record<string, SchemaObject>)
    .map(([type, media]) => [type, { ...media, schema: referenced(media.schema as SchemaObject) }]));
  return { ...schema, content };
}

/** The schemas of a response given per media type (`content`), if it is. */
function mediaSchemas(schema: SchemaObject | undefined): SchemaObject[] {
  return isObject(schema?.content) ? Object.values(schema.content as Record<string, SchemaObject>).map((media) => media.schema as SchemaObject) : [];
}

interface OpenApiDoc {
  paths?: Record<string, Record<string, OperationDoc>>;
  components?: { schemas?: Record<string, SchemaObject> };
}
interface MediaDoc { example?: unknown }
interface OperationDoc {
  operationId?: string;
  requestBody?: { content?: Record<string, MediaDoc> };
  responses?: Record<string, { content?: Record<string, MediaDoc> }>;
}

/** Examples go on the media types, which exist only once the document is built (the first one per answer). */
function placeExamples(paths: Record<string, Record<string, OperationDoc>>, examples: Map<string, Examples>): void {
  for (const op of Object.values(paths).flatMap((item) => Object.values(item))) {
    const found = op.operationId ? examples.get(op.operationId) : undefined;
    if (!found) continue;
    if (found.request !== undefined) for (const media of Object.values(op.requestBody?.content ?? {})) media.example = found.request;
    for (const [status, example] of Object.entries(found.responses)) {
      const first = Object.values(op.responses?.[status]?.content ?? {})[0];
      if (first) first.example = example;
    }
  }
}

/**
 * A discriminated union's branches are components, and without `mapping` OpenAPI tools take a
 * branch's name for its tag value. Ajv refuses `mapping`, so it is written here, from the constant
 * each branch gives its tag.
 */
function mapDiscriminators(schemas: Record<string, SchemaObject>): void {
  for (const schema of Object.values(schemas)) {
    const discriminator = schema.discriminator as { propertyName: string; mapping?: Record<string, string> } | undefined;
    if (!discriminator || discriminator.mapping || !Array.isArray(schema.oneOf)) continue;
    const mapping: Record<string, string> = {};
    for (const branch of schema.oneOf as Array<{ $ref?: string }>) {
      const tag = (schemas[branch.$ref?.split('/').pop() ?? '']?.properties as Record<string, { enum?: unknown[]; const?: unknown }> | undefined)
        ?.[discriminator.propertyName];
      const value = tag?.const ?? tag?.enum?.[0];
      if (typeof value === 'string' && branch.$ref) mapping[value] = branch.$ref;
    }
    discriminator.mapping = mapping;
  }
}

function dropKeywords(node: unknown, keywords: string[]): void {
  if (Array.isArray(node)) for (const item of node) dropKeywords(item, keywords);
  else if (isObject(node)) {
    for (const [key, value] of Object.entries(node)) {
      if (keywords.includes(key)) delete node[key];
      else if (key !== 'example') dropKeywords(value, keywords);
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
