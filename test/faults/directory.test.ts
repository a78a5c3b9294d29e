import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import * as admin from '../../src/modules/admin/index.ts';
import { request, startServer, type ServerProcess } from '../support/server-process.ts';
import { accountPayload, ROUTES } from './fixtures.ts';
import { openHarness, tenantOf, waitFor, withAppName } from './integrity.ts';

// Two instances keep API keys and suppliers in memory (core/directory.ts). A key revoked, or a
// supplier paused, through import-admin on neither instance is refused by both within a second; and
// after their listening sessions are killed, both come back to listening and still see changes.
const url = process.env.DATABASE_URL;
const skip = url ? false : 'needs PostgreSQL: set DATABASE_URL (two instances cannot share the embedded store)';
const APP = `faults-dir-${process.pid}`;

describe('the directory across two instances', { skip }, () => {
  const servers: ServerProcess[] = [];
  after(async () => { for (const s of servers) await s.kill(); });

  test('a revoked key and a paused supplier are refused by both instances within one second, also after their listeners were cut', async (ctx) => {
    const h = await openHarness(url!);
    after(() => h.close());
    const db = h.t.store.db;
    const both = await Promise.all(['a', 'b'].map((name) => startServer({ DATABASE_URL: withAppName(url!, `${APP}-${name}`), OUTBOX_INTERVAL_MS: '0' }, 60_000)));
    servers.push(...both);
    const listeners = async () => Number((await sql<{ n: string }>`
      SELECT count(*) AS n FROM pg_stat_activity WHERE application_name LIKE ${`${APP}-%`} AND query LIKE 'LISTEN %'`.execute(db)).rows[0]!.n);
    await waitFor('both instances listening', listeners, (n) => n === 2);
    let n = 0;
    const stage = (server: ServerProcess, tenant: { token: string; supplier: string }) =>
      request(server.url, 'POST', ROUTES.stage, { token: tenant.token, body: accountPayload(tenant.supplier, `DIR-${process.pid}-${n++}`) });

    /** Milliseconds until every instance answers as `refused` says, polling each every 20 ms. */
    const untilRefused = async (ask: (server: ServerProcess) => Promise<boolean>) => {
      const started = performance.now();
      await Promise.all(both.map(async (server) => {
        while (!(await ask(server))) {
          assert.ok(performance.now() - started < 1000, 'refused within one second');
          await sleep(20);
        }
      }));
      return performance.now() - started;
    };

    const check = async (round: string) => {
      const tenant = await tenantOf(h);
      // Both instances have served the key and the supplier, so both hold them in memory.
      for (const server of both) assert.equal((await stage(server, tenant)).status, 201);
      await admin.revokeApiKey(db, tenant.apiKey);
      const revoked = await untilRefused(async (server) => (await stage(server, tenant)).status === 401);

      const other = await tenantOf(h);
      for (const server of both) assert.equal((await stage(server, other)).status, 201);
      await admin.setSupplier(db, other.supplier, { status: 'paused' });
      const paused = await untilRefused(async (server) => (await stage(server, other)).json?.code === 'import_supplier_paused');
      ctx.diagnostic(`${round}: revoked key refused by both after ${revoked.toFixed(0)} ms, paused supplier after ${paused.toFixed(0)} ms`);
    };

    await check('listening');
    // Cut both listening sessions, as a database failover or a network fault would.
    await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE ${`${APP}-%`} AND query LIKE 'LISTEN %'`.execute(db);
    await check('right after the listeners were cut');
    await waitFor('both instances listening again', listeners, (count) => count === 2);
    await check('listening again');
  });
});
