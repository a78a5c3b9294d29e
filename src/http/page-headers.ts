import type { FastifyReply } from 'fastify';

// The headers of every page a browser renders from this service: the dashboard and the API
// reference at /docs. Each page names its own Content-Security-Policy (what its scripts and styles
// need); the rest is the same for both: never framed by another site (clickjacking: the dashboard
// signs in with an API key, /docs sends requests with a token), no MIME sniffing, no referrer.
export function setPageHeaders(reply: FastifyReply, contentSecurityPolicy: string): FastifyReply {
  return reply
    .header('content-security-policy', contentSecurityPolicy)
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer');
}
