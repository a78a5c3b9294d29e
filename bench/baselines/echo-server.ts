import Fastify from 'fastify';

// The validate-account baseline: a bare Fastify route that takes the same JSON body and answers it,
// started the same way as the service (its own process, same body limit), with nothing else in the
// way. Like the service, it parses the body with Fastify's own JSON parser (a route must, to look at
// it) and answers the text as it came, not the parsed body serialised again: the least any route
// taking that body and echoing it can do.
const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
const parseJson = app.getDefaultJsonParser('error', 'error');
const texts = new WeakMap<object, string>();
app.removeContentTypeParser('application/json');
app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
  void parseJson(request, body as string, (error: Error | null, value?: unknown) => {
    if (!error && value !== null && typeof value === 'object') texts.set(value, body as string);
    done(error, value);
  });
});
app.post('/echo', async (request, reply) => {
  const text = texts.get(request.body as object);
  return text === undefined ? request.body : reply.type('application/json; charset=utf-8').send(text);
});
app.get('/healthz', async () => ({ status: 'ok' }));
await app.listen({ host: process.env.HOST ?? '127.0.0.1', port: Number(process.env.PORT ?? 0) });
process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)); });
