import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import { createEvents, type NewEvent } from '../../src/modules/events/index.ts';
import { createWebhook } from '../../src/modules/webhooks/index.ts';
import { supplierIdOf } from '../support/imports.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';

// The events writer (createEvents): `record`, through which every event is written (one, or many,
// alone or in the statement of the change they report), and `recordPerRow` (the staging group
// commit's), on PGlite and PostgreSQL. What wakes the webhooks' fan-out is the events table's
// trigger: webhooks.test.ts.
const t = await buildTestApp();
const db = t.store.db;

describe('events.record', () => {
  test('writes the events in the order given, in the caller\'s transaction; a failing transaction keeps none', async () => {
    const a = await supplierIdOf(t, (await createTenant(t)).supplier);
    const b = await supplierIdOf(t, (await createTenant(t)).supplier);
    const event = (supplierId: number, ext: string): NewEvent =>
      ({ supplierId, type: 'import_process.staged', externalAccountNumber: ext, data: { first_staging: true } });
    const events = [event(a, 'A-1'), event(a, 'A-2'), event(b, 'B-1'), event(a, 'A-3'), event(b, 'B-2')];
    const writer = createEvents();
    await db.transaction().execute((trx) => writer.record(trx, events));
    // A failing transaction keeps none of its events.
    await assert.rejects(db.transaction().execute(async (trx) => {
      await writer.record(trx, [event(a, 'A-rolled-back')]);
      throw new Error('roll back');
    }), /roll back/);
    const rows = await db.selectFrom('events').select(['supplier_id', 'external_account_number'])
      .where('supplier_id', 'in', [a, b]).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => r.external_account_number), ['A-1', 'A-2', 'B-1', 'A-3', 'B-2']);
  });

  test('no events: nothing written', async () => {
    const count = async () => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM events`.execute(db)).rows[0]!.n);
    const before = await count();
    assert.deepEqual(await db.transaction().execute((trx) => createEvents().record(trx, [])), []);
    assert.equal(await count(), before);
  });

  test('with a write: the write and the event in one statement, the write\'s rows answered; a failing write keeps no event', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const event: NewEvent = { supplierId, type: 'import_process.staged', externalAccountNumber: 'W-1', data: { first_staging: true } };
    const writer = createEvents();
    const write = (trx: Transaction<Database>, team: string) =>
      trx.insertInto('operations_teams').values({ name: team }).returning(['id', 'name']);
    const team = `team-${supplierId}`;
    const answered = await db.transaction().execute((trx) => writer.record(trx, [event], write(trx, team)));
    // The same team again breaks the unique name: the statement fails whole, its event with it.
    await assert.rejects(db.transaction().execute((trx) => writer.record(trx, [{ ...event, externalAccountNumber: 'W-2' }], write(trx, team))));
    assert.equal(answered.length, 1);
    assert.equal(answered[0]!.name, team);
    // No write (an import that found nothing new): the event alone, no rows answered.
    const alone = await db.transaction().execute((trx) => writer.record(trx, [{ ...event, externalAccountNumber: 'W-3' }], null));
    assert.deepEqual(alone, []);
    const rows = await db.selectFrom('events').select('external_account_number').where('supplier_id', '=', supplierId).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => r.external_account_number), ['W-1', 'W-3']);
    await db.deleteFrom('operations_teams').where('name', '=', team).execute();
  });

  test('recordPerRow: the change and an event per written row in one statement, for an organisation with webhooks too (the statement wakes the fan-out itself); a failing statement keeps no event', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    // An endpoint (for events this test does not record): its fan-out is woken by the statement itself.
    await createWebhook(db, tenant.organisation, 'https://receiver.example/hook', 'migration_job.cancelled');
    const team = `team-w-${supplierId}`;
    // A change whose rows name their event's supplier and account.
    const statement = (name: string) => sql<{ supplier_id: number; external_account_number: string }>`
      INSERT INTO operations_teams (name) VALUES (${name}) RETURNING ${supplierId}::int8 AS supplier_id, name AS external_account_number`;
    const perRow = { type: 'import_process.staged', data: sql<unknown>`'{"first_staging":true}'::jsonb` } as const;
    const writer = createEvents();
    const written = await writer.recordPerRow(db, statement(`${team}-1`), perRow);
    // The same name again breaks the unique name: the statement fails whole, its event with it.
    await assert.rejects(writer.recordPerRow(db, statement(`${team}-1`), perRow));
    assert.deepEqual(written.map((r) => r.external_account_number), [`${team}-1`]);
    const rows = await db.selectFrom('events').select('external_account_number').where('supplier_id', '=', supplierId).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => r.external_account_number), [`${team}-1`]);
    await db.deleteFrom('operations_teams').where('name', 'like', `${team}-%`).execute();
  });
});
