import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { NewEvent } from '../../src/modules/events/event-types.ts';
import { recordEvents, setEventRecordedHook } from '../../src/modules/events/events.repository.ts';
import { supplierIdOf } from '../support/imports.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';

// recordEvents, through which every event is written (one, or a staging batch's many), on PGlite and
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
});
