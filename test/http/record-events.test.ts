import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import { createEvents, type EventRecordedHook, type NewEvent } from '../../src/modules/events/index.ts';
import { supplierIdOf } from '../support/imports.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';

// The events writer (createEvents): `record`, through which every event is written (one, or many,
// alone or in the statement of the change they report), and `recordPerRow` (the staging group
// commit's), on PGlite and PostgreSQL, each test with an after-record hook of its own.
const t = await buildTestApp();
const db = t.store.db;

describe('events.record', () => {
  test('writes the events in the order given, in the caller\'s transaction, and runs the hook once per supplier, in the order of their first events', async () => {
    const a = await supplierIdOf(t, (await createTenant(t)).supplier);
    const b = await supplierIdOf(t, (await createTenant(t)).supplier);
    const event = (supplierId: number, ext: string): NewEvent =>
      ({ supplierId, type: 'import_process.staged', externalAccountNumber: ext, data: { first_staging: true } });
    const events = [event(a, 'A-1'), event(a, 'A-2'), event(b, 'B-1'), event(a, 'A-3'), event(b, 'B-2')];
    const told: number[] = [];
    const writer = createEvents({ onRecorded: async (_trx, supplierId) => { told.push(supplierId); } });
    await db.transaction().execute((trx) => writer.record(trx, events));
    // A failing transaction keeps none of its events.
    await assert.rejects(db.transaction().execute(async (trx) => {
      await writer.record(trx, [event(a, 'A-rolled-back')]);
      throw new Error('roll back');
    }), /roll back/);
    assert.deepEqual(told, [a, b, a]);
    const rows = await db.selectFrom('events').select(['supplier_id', 'external_account_number'])
      .where('supplier_id', 'in', [a, b]).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => r.external_account_number), ['A-1', 'A-2', 'B-1', 'A-3', 'B-2']);
  });

  test('no events: nothing written, no hook', async () => {
    let called = false;
    const writer = createEvents({ onRecorded: async () => { called = true; } });
    assert.deepEqual(await db.transaction().execute((trx) => writer.record(trx, [])), []);
    assert.equal(called, false);
  });

  test('with a write: the write and the event in one statement, the write\'s rows answered, the hook run after; a failing write keeps no event', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const event: NewEvent = { supplierId, type: 'import_process.staged', externalAccountNumber: 'W-1', data: { first_staging: true } };
    const told: string[] = [];
    const writer = createEvents({
      onRecorded: async (trx, id) => {
        // Run after the statement: the event is already there for the hook to see.
        const seen = await trx.selectFrom('events').select('external_account_number').where('supplier_id', '=', id).orderBy('id').execute();
        told.push(`${seen.at(-1)?.external_account_number} (${seen.length} seen)`);
      },
    });
    const write = (trx: Transaction<Database>, team: string) =>
      trx.insertInto('operations_teams').values({ name: team }).returning(['id', 'name']);
    const team = `team-${supplierId}`;
    const answered = await db.transaction().execute((trx) => writer.record(trx, [event], write(trx, team)));
    // The same team again breaks the unique name: the statement fails whole, its event with it.
    await assert.rejects(db.transaction().execute((trx) => writer.record(trx, [{ ...event, externalAccountNumber: 'W-2' }], write(trx, team))));
    assert.equal(answered.length, 1);
    assert.equal(answered[0]!.name, team);
    assert.deepEqual(told, ['W-1 (1 seen)']);
    // No write (an import that found nothing new): the event alone, no rows answered.
    const alone = await db.transaction().execute((trx) => writer.record(trx, [{ ...event, externalAccountNumber: 'W-3' }], null));
    assert.deepEqual(alone, []);
    const rows = await db.selectFrom('events').select('external_account_number').where('supplier_id', '=', supplierId).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => r.external_account_number), ['W-1', 'W-3']);
    await db.deleteFrom('operations_teams').where('name', '=', team).execute();
  });

  test('recordPerRow: the change and an event per written row in one statement, run alone while the hook is idle for its suppliers, else in a transaction with the hook; a failing statement keeps no event', async () => {
    const supplierId = await supplierIdOf(t, (await createTenant(t)).supplier);
    const team = `team-w-${supplierId}`;
    // A change whose rows name their event's supplier and account.
    const statement = (name: string) => sql<{ supplier_id: number; external_account_number: string }>`
      INSERT INTO operations_teams (name) VALUES (${name}) RETURNING ${supplierId}::int8 AS supplier_id, name AS external_account_number`;
    const perRow = { type: 'import_process.staged', data: sql<unknown>`'{"first_staging":true}'::jsonb` } as const;
    let idle = true;
    const told: number[] = [];
    const hook: EventRecordedHook = Object.assign(async (_trx: unknown, id: number) => { told.push(id); },
      { idleFor: (id: number) => idle && id === supplierId });
    const writer = createEvents({ onRecorded: hook });
    const alone = await writer.recordPerRow(db, statement(`${team}-1`), perRow, [supplierId]);
    idle = false;
    const joined = await writer.recordPerRow(db, statement(`${team}-2`), perRow, [supplierId]);
    // The same name again breaks the unique name: the statement fails whole, its event with it.
    await assert.rejects(writer.recordPerRow(db, statement(`${team}-2`), perRow, [supplierId]));
    idle = true;
    await assert.rejects(writer.recordPerRow(db, statement(`${team}-1`), perRow, [supplierId]));
    assert.deepEqual(alone.map((r) => r.external_account_number), [`${team}-1`]);
    assert.deepEqual(joined.map((r) => r.external_account_number), [`${team}-2`]);
    // The hook ran only while not idle, after its statement: for the second one (the third failed before it).
    assert.deepEqual(told, [supplierId]);
    const rows = await db.selectFrom('events').select('external_account_number').where('supplier_id', '=', supplierId).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => r.external_account_number), [`${team}-1`, `${team}-2`]);
    await db.deleteFrom('operations_teams').where('name', 'like', `${team}-%`).execute();
  });
});
