// The dashboard's only way to the service: the token exchange at /graphql and the documented JSON
// endpoints under /v1/data-import/. The token pair lives in this tab's sessionStorage (never in a URL)
// and is refreshed with the refresh token before the token expires.

const KEY = 'migration-dashboard.session';
const REFRESH_MARGIN_MS = 60_000;

const OBTAIN = `mutation ObtainToken($input: ObtainTokenInput!) {
  obtainToken(input: $input) { token expiresIn refreshToken refreshExpiresIn }
}`;

export class SignedOut extends Error {}

function load() {
  try { return JSON.parse(sessionStorage.getItem(KEY) ?? 'null'); } catch { return null; }
}

function save(pair) {
  const now = Date.now();
  sessionStorage.setItem(KEY, JSON.stringify({
    token: pair.token, expiresAt: now + pair.expiresIn * 1000,
    refreshToken: pair.refreshToken, refreshExpiresAt: now + pair.refreshExpiresIn * 1000,
  }));
}

export function signOut() { sessionStorage.removeItem(KEY); }
export function isSignedIn() { const s = load(); return Boolean(s && s.refreshExpiresAt > Date.now()); }

async function obtain(input) {
  const res = await fetch('/graphql', {
    method: 'POST', headers: { 'content-type': 'application/json' }, credentials: 'omit',
    body: JSON.stringify({ query: OBTAIN, variables: { input } }),
  });
  const body = await res.json().catch(() => ({}));
  const pair = body?.data?.obtainToken;
  if (!pair) throw new SignedOut(body?.errors?.[0]?.message ?? `Sign-in failed (${res.status}).`);
  save(pair);
}

export const signIn = (apiKey) => obtain({ APIKey: apiKey });

let refreshing = null;
/** The token, refreshed first when it expires within a minute (one refresh at a time). */
async function token() {
  const session = load();
  if (!session || session.refreshExpiresAt <= Date.now()) { signOut(); throw new SignedOut('Please sign in.'); }
  if (session.expiresAt - Date.now() > REFRESH_MARGIN_MS) return session.token;
  refreshing ??= obtain({ refreshToken: session.refreshToken }).finally(() => { refreshing = null; });
  try { await refreshing; } catch (error) { signOut(); throw error; }
  return load().token;
}

/** GET a JSON endpoint under /v1/data-import/; throws the D4 error body's detail on failure. */
export const get = async (path) => (await call('GET', path)).json();
/** POST to an endpoint under /v1/data-import/ that takes no body (a job's pause/, resume/). */
export const post = async (path) => (await call('POST', path)).json();
/** GET a keyset-paged list: its body, and the cursor of the next page from the Link header (null on the last). */
export async function getPage(path) {
  const res = await call('GET', path);
  const next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '');
  return { body: await res.json(), next: next ? new URL(next[1], location.origin).searchParams.get('cursor') : null };
}
/** GET an NDJSON endpoint (a job's records, its reconciliation exceptions) as an array of objects. */
export async function getLines(path) {
  const text = await (await call('GET', path, 'application/x-ndjson')).text();
  return text.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line));
}

async function call(method, path, accept = 'application/json') {
  const res = await fetch(`/v1/data-import/${path}`, {
    method, headers: { authorization: `Token ${await token()}`, accept }, credentials: 'omit',
  });
  if (res.ok) return res;
  const body = await res.json().catch(() => null);
  if (res.status === 401) { signOut(); throw new SignedOut(body?.detail ?? 'Please sign in again.'); }
  throw Object.assign(new Error(body?.detail ?? `HTTP ${res.status}`), { status: res.status, code: body?.code });
}

export const seg = (value) => encodeURIComponent(value);
