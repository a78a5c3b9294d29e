import { call, type Tenant, type TestApp } from './test-app.ts';

// Reading the event feed in tests. On PostgreSQL an event shows in the feed once every transaction
// older than its own has ended, and other test files (and other databases on the same server) run
// transactions meanwhile, so readers wait for what they expect rather than read once.

export const EVENTS_URL = '/v1/data-import/events/';

export function feed(t: TestApp, tenant: Tenant, query = '') {
  return call(t.app, 'GET', `${EVENTS_URL}?import_supplier=${encodeURIComponent(tenant.supplier)}${query}`, { token: tenant.token });
}

/** Every event of the tenant's supplier, once at least `count` are visible (paged with `after`). */
export async function eventsOf(t: TestApp, tenant: Tenant, count: number, timeoutMs = 30_000): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all: any[] = [];
    let after = '';
    for (;;) {
      const res = await feed(t, tenant, `&limit=1000${after}`);
      if (res.status !== 200) throw new Error(`feed answered ${res.status} ${res.body}`);
      all.push(...res.json);
      if (res.json.length < 1000) break;
      after = `&after=${res.json[res.json.length - 1].id}`;
    }
    if (all.length >= count) return all;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${count} events, saw ${all.length}: ${JSON.stringify(all)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Events without the fields that differ between runs (id, created_at), for literal comparisons. */
export function shapes(events: any[]): Array<{ type: string; external_account_number: string | null; data: unknown }> {
  return events.map((e) => ({ type: e.type, external_account_number: e.external_account_number, data: e.data }));
}
