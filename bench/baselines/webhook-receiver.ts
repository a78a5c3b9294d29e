import { createServer } from 'node:http';

// The webhook receiver of the events row: answers every POST with 200 at once and counts them
// (GET /count). No signature check: the cost measured is the service's, not the receiver's.
let received = 0;
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') return void res.end('{"status":"ok"}');
  if (req.method === 'GET' && req.url === '/count') return void res.end(JSON.stringify({ received }));
  req.resume();
  req.on('end', () => {
    if (req.method === 'POST') received += 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
