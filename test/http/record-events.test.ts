import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { NewEvent } from '../../src/modules/events/event-types.ts';
import { sql } from 'kysely';
import { recordEvents, recordEventsWith, setEventRecordedHook, writeWithEvents, type EventRecordedHook } from '../../src/modules/events/events.repository.ts';
import { supplierIdOf } from '../support/imports.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';

// recordEvents, through which every event is written (one, or a staging batch's many), and
// recordEventsWith, which writes them in the statement of the change they report, on PGlite and
// PostgreSQL. Its own file: it replaces the process's after-record hook (the webhooks' fan-out trigger).
const t = await buildTestApp();
const db = t.store.db;

describe('recordEvents', () => {
  test('writes the events in the order given, in the caller\'s transaction, and runs the hook once per supplier with its first event', async () => {
    const a = await supplierIdOf(t, (await createTenant(t)).supplier);
    const b = await supplierIdOf(t, (await createTenant(t)).supplier);
    const event = (supplierId: number, ext: string): NewEvent =>
      ({ supplierId, type: 'import_process.staged', externalAccountNumber: ext, data: { first_staging: true } });
    const events = [event(a, 'A-1'), event(a, 'A-2'), event(b, 'B-1'), event(a, 'A-3'), event(b, 'B-2')];
    const told: string[] = [];
    setEventRecordedHook(async (_trx, e) => { told.push(e.externalAccountNumber ?? ''); });
    try {
      await db.transaction().execute((trx) => recordEvents(trx, events));
      // A failing transaction keeps none of its events.
      await assert.rejects(db.transaction().execute(async (trx) => {
        await recordEvents(trx, [event(a, 'A-rolled-back')]);
        throw new Error('roll back');
      }), /roll back/);
    } finally {
      setEventRecordedHook(null);
    }
    assert.deepEqual(told, ['A-1', 'B-1', 'A-rolled-back']);
    const rows = await db.selectFrom('events').select(['supplier_id', 'external_account_number'])
      .where('supplier_id', 'in', [a, b]).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => r.external_account_number), ['A-1', 'A-2', 'B-1', 'A-3', 'B-2']);
  });

  test('no events: nothing written, no hook', async () => {
    let called = false;
    setEventRecordedHook(async () => { called = true; });
    try {
      await db.transaction().execute((trx) => recordEvents(trx, []));
    } finally {
      setEventRecordedHook(null);
    }
    assert.equal(called, false);
  });

  test('recordEventsWith: the write and the event in one statement, the write\'s rows answered, the hook run after; a failing write keeps no event', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const event: NewEvent = { supplierId, type: 'import_process.staged', externalAccountNumber: 'W-1', data: { first_staging: true } };
    const told: string[] = [];
    setEventRecordedHook(async (trx, e) => {
      // Run after the statement: the event is already there for the hook to see.
      const seen = await trx.selectFrom('events').select('id').where('supplier_id', '=', supplierId).execute();
      told.push(`${e.externalAccountNumber} (${seen.length} seen)`);
    });
    const write = (trx: Parameters<typeof recordEvents>[0], team: string) =>
      trx.insertInto('operations_teams').values({ name: team }).returning(['id', 'name']);
    const team = `team-${supplierId}`;
    let answered: Array<{ id: number; name: string }>;
    try {
      answered = await db.transaction().execute((trx) => recordEventsWith(trx, [event], write(trx, team)));
      // The same team again breaks the unique name: the statement fails whole, its event with it.
      await assert.rejects(db.transaction().execute((trx) => recordEventsWith(trx, [{ ...event, externalAccountNumber: 'W-2' }], write(trx, team))));
    } finally {
      setEventRecordedHook(null);
    }
    assert.equal(answered.length, 1);
    assert.equal(answered[0]!.name, team);
    assert.deepEqual(told, ['W-1 (1 seen)']);
    // No write (an import that found nothing new): the event alone, no rows answered.
    const alone = await db.transaction().execute((trx) => recordEventsWith(trx, [{ ...event, externalAccountNumber: 'W-3' }], null));
    assert.deepEqual(alone, []);
    const rows = await db.selectFrom('events').select('external_account_number').where('supplier_id', '=', supplierId).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => r.external_account_number), ['W-1', 'W-3']);
    await db.deleteFrom('operations_teams').where('name', '=', team).execute();
  });

  test('writeWithEvents: the change and its events in one statement, run alone while the hook is idle for its suppliers, else in a transaction with the hook; a failing statement keeps no event', async () => {
    const supplierId = await supplierIdOf(t, (await createTenant(t)).supplier);
    const team = `team-w-${supplierId}`;
    // A change and its event in one statement.
    const statement = (name: string) => sql<{ name: string }>`
      WITH written AS (INSERT INTO operations_teams (name) VALUES (${name}) RETURNING name),
      recorded AS (INSERT INTO events (supplier_id, type, external_account_number, data)
        SELECT ${supplierId}, 'import_process.staged', written.name, '{"first_staging":true}'::jsonb FROM written)
      SELECT name FROM written`;
    const event = (id: number): NewEvent => ({ supplierId: id, type: 'import_process.staged', externalAccountNumber: null, data: { first_staging: true } });
    let idle = true;
    const told: number[] = [];
    const hook: EventRecordedHook = Object.assign(async (_trx: unknown, e: NewEvent) => { told.push(e.supplierId); },
      { idleFor: (id: number) => idle && id === supplierId });
    setEventRecordedHook(hook);
    try {
      const alone = await writeWithEvents(db, [supplierId], statement(`${team}-1`), event);
      idle = false;
      const joined = await writeWithEvents(db, [supplierId], statement(`${team}-2`), event);
      // The same name again breaks the unique name: the statement fails whole, its event with it.
      await assert.rejects(writeWithEvents(db, [supplierId], statement(`${team}-2`), event));
      idle = true;
      await assert.rejects(writeWithEvents(db, [supplierId], statement(`${team}-1`), event));
      assert.deepEqual(alone, [{ name: `${team}-1` }]);
      assert.deepEqual(joined, [{ name: `${team}-2` }]);
    } finally {
      setEventRecordedHook(null);
    }
    // The hook ran only while not idle, after its statement: for the second one (the third failed before it).
    assert.deepEqual(told, [supplierId]);
    const rows = await db.selectFrom('events').select('external_account_number').where('supplier_id', '=', supplierId).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => r.external_account_number), [`${team}-1`, `${team}-2`]);
    await db.deleteFrom('operations_teams').where('name', 'like', `${team}-%`).execute();
  });
});
