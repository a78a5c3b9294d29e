import Fastify from 'fastify';

// The validate-account baseline: a bare Fastify route that echoes the same JSON body, started the
// same way as the service (its own process, same body limit), with nothing else in the way.
const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
app.post('/echo', async (request) => request.body);
app.get('/healthz', async () => ({ status: 'ok' }));
await app.listen({ host: process.env.HOST ?? '127.0.0.1', port: Number(process.env.PORT ?? 0) });
process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)); });
