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
export const get = (path) => call('GET', path);
/** POST to an endpoint under /v1/data-import/ that takes no body (a job's pause/, resume/). */
export const post = (path) => call('POST', path);

async function call(method, path) {
  const res = await fetch(`/v1/data-import/${path}`, {
    method, headers: { authorization: `Token ${await token()}`, accept: 'application/json' }, credentials: 'omit',
  });
  const body = await res.json().catch(() => null);
  if (res.status === 401) { signOut(); throw new SignedOut(body?.detail ?? 'Please sign in again.'); }
  if (!res.ok) throw Object.assign(new Error(body?.detail ?? `HTTP ${res.status}`), { status: res.status, code: body?.code });
  return body;
}

export const seg = (value) => encodeURIComponent(value);
