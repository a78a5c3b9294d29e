import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AppError } from '../core/errors.ts';
import { setPageHeaders } from './page-headers.ts';

// GET /dashboard/ (D14): a static page and its scripts (and /dashboard/jobs/<id>/report, the printable
// reconciliation report of a job), outside the /v1 token guard (the page signs
// in itself, at /graphql, and calls the documented JSON endpoints with the token in a header).
// Only the files listed here are served, read once at start: no path from the URL ever reaches
// the file system. The libraries come from node_modules (the machines have no internet, no CDN).

const require = createRequire(import.meta.url);
const PAGE_DIR = fileURLToPath(new URL('../dashboard/', import.meta.url));
const packageDir = (name: string) => dirname(require.resolve(`${name}/package.json`));

const FILES: Record<string, { path: string; type: string }> = {
  '': { path: join(PAGE_DIR, 'index.html'), type: 'text/html; charset=utf-8' },
  'app.js': { path: join(PAGE_DIR, 'app.js'), type: 'text/javascript; charset=utf-8' },
  'api.js': { path: join(PAGE_DIR, 'api.js'), type: 'text/javascript; charset=utf-8' },
  'jobs.js': { path: join(PAGE_DIR, 'jobs.js'), type: 'text/javascript; charset=utf-8' },
  'signin.js': { path: join(PAGE_DIR, 'signin.js'), type: 'text/javascript; charset=utf-8' },
  'format.js': { path: join(PAGE_DIR, 'format.js'), type: 'text/javascript; charset=utf-8' },
  'report.js': { path: join(PAGE_DIR, 'report.js'), type: 'text/javascript; charset=utf-8' },
  'report.html': { path: join(PAGE_DIR, 'report.html'), type: 'text/html; charset=utf-8' },
  'dashboard.css': { path: join(PAGE_DIR, 'dashboard.css'), type: 'text/css; charset=utf-8' },
  'vendor/preact.js': { path: join(packageDir('preact'), 'dist/preact.module.js'), type: 'text/javascript; charset=utf-8' },
  'vendor/htm.js': { path: join(dirname(require.resolve('htm')), 'htm.module.js'), type: 'text/javascript; charset=utf-8' },
  'vendor/uplot.js': { path: require.resolve('uplot/dist/uPlot.esm.js'), type: 'text/javascript; charset=utf-8' },
  'vendor/uplot.css': { path: require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css; charset=utf-8' },
};

/**
 * Same origin only; no inline script or style, no framing, nothing sent elsewhere. Styles set from
 * script (uPlot, Preact's style props) go through the CSSOM, which style-src does not restrict.
 */
export const DASHBOARD_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
  + "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function registerDashboard(app: FastifyInstance): void {
  const files = new Map(Object.entries(FILES).map(([name, file]) => [name, { body: readFileSync(file.path), type: file.type }]));
  const send = (name: string, reply: FastifyReply) => {
    const file = files.get(name);
    // An unknown file is the service's own 404, in JSON like every other error.
    if (!file) throw new AppError('not_found', `No dashboard file "${name}".`);
    return setPageHeaders(reply, DASHBOARD_CSP)
      .type(file.type)
      // The page holds nothing secret, but the answers of the API it calls do: never cache those (they
      // carry no-store of their own); the page itself is revalidated so a deploy shows at once.
      .header('cache-control', 'no-cache')
      .send(file.body);
  };
  // The router ignores trailing slashes, so /dashboard/ (and /dashboard) needs a route of its own.
  // Without the slash the page's relative links would point above it: redirect to it.
  app.get('/dashboard/', { schema: { hide: true } }, async (request, reply) =>
    (request.url.split('?')[0]!.endsWith('/') ? send('', reply) : reply.redirect('/dashboard/', 301)));
  // A job's printable reconciliation report: one page whose script reads the job id from the URL.
  app.get('/dashboard/jobs/:job_id/report', { schema: { hide: true } }, async (_request, reply) => send('report.html', reply));
  app.get('/dashboard/*', { schema: { hide: true } }, async (request, reply) => send((request.params as { '*': string })['*'], reply));
}
