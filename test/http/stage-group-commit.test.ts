import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import * as admin from '../../src/modules/admin/index.ts';
import type { AccountData } from '../../src/modules/account-data/index.ts';
import { insertImportedAccount } from '../support/accounts.ts';
import { STAGE_URL, stage, supplierIdOf } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';

// Group commit of staging (issue #12, staging-writer.ts): concurrent stages are written together,
// yet each request gets the answer it would get alone, one event per stage that landed, and a row
// that fails does not fail the rows written beside it.

const t = await buildTestApp();

const post = (tenant: Tenant, body: unknown) => call(t.app, 'POST', STAGE_URL, { token: tenant.token, body });

async function stagedEvents(tenant: Tenant) {
  return t.store.db.selectFrom('events')
    .select(['external_account_number', 'data', sql<string>`xid::text`.as('xid')])
    .where('supplier_id', '=', await supplierIdOf(t, tenant.supplier))
    .where('type', '=', 'import_process.staged')
    .execute();
}

async function storedData(tenant: Tenant, ext: string) {
  const row = await t.store.db.selectFrom('account_imports').select('data')
    .where('supplier_id', '=', await supplierIdOf(t, tenant.supplier)).where('external_account_number', '=', ext)
    .executeTakeFirst();
  return row?.data;
}

/** Sends every body at once; `order` lists the indexes in the order their answers came back. */
async function burst(tenant: Tenant, bodies: unknown[]) {
  const order: number[] = [];
  const answers = await Promise.all(bodies.map((body, i) => post(tenant, body).then((res) => (order.push(i), res))));
  return { answers, order };
}

const invalidPayload = (supplier: string) => {
  const payload = accountPayload(supplier);
  payload.customers[0]!.mobile = '12';
  return payload;
};

describe('staging under concurrency: one transaction for many stages, each answered as if alone', () => {
  test('a burst of 60: new, re-staged, one account 5 times, imported, skipped, invalid', async () => {
    const tenant = await createTenant(t);
    const restaged = await Promise.all(Array.from({ length: 15 }, () => stage(t, tenant)));
    const imported = await insertImportedAccount(t, tenant);
    const skipped = await stage(t, tenant);
    await admin.skipAccount(t.store.db, tenant.supplier, skipped.external_account_number);
    // What the invalid body gets alone, to compare with what it gets in the burst.
    const invalidAlone = await post(tenant, invalidPayload(tenant.supplier));
    assert.equal(invalidAlone.status, 400);
    const eventsBefore = (await stagedEvents(tenant)).length;

    const fresh = Array.from({ length: 37 }, () => accountPayload(tenant.supplier));
    const changed = restaged.map((p) => ({ ...p, unknown_occupier: true }));
    const repeatedExt = unique('EXT');
    const repeated: AccountData[] = Array.from({ length: 5 }, (_, i) => accountPayload(tenant.supplier, {
      external_account_number: repeatedExt, metadata: [{ key: 'version', value: { n: i } }],
    }));
    const bodies: unknown[] = [
      ...fresh, ...changed, ...repeated,
      accountPayload(tenant.supplier, { external_account_number: imported.externalAccountNumber }),
      skipped, invalidPayload(tenant.supplier),
    ];
    assert.equal(bodies.length, 60);
    const { answers, order } = await burst(tenant, bodies);
    const at = (from: number, count: number) => answers.slice(from, from + count);

    const staged = (p: { external_account_number: string }) => ({ import_supplier: tenant.supplier, external_account_number: p.external_account_number });
    at(0, 37).forEach((res, i) => assert.deepEqual([res.status, res.json], [201, staged(fresh[i]!)]));
    at(37, 15).forEach((res, i) => assert.deepEqual([res.status, res.json], [200, staged(changed[i]!)]));
    const repeatedAnswers = at(52, 5);
    repeatedAnswers.forEach((res) => assert.deepEqual(res.json, staged(repeated[0]!)));
    assert.deepEqual(repeatedAnswers.map((r) => r.status).sort(), [200, 200, 200, 200, 201]);

    const [importedRes, skippedRes, invalidRes] = at(57, 3);
    const importedDetail = `Account "${imported.externalAccountNumber}" is already imported as ${imported.serviceAccountNumber}.`;
    assert.deepEqual([importedRes!.status, importedRes!.json], [400, {
      detail: importedDetail, code: 'account_already_imported',
      errors: [{ detail: importedDetail, code: 'account_already_imported', attr: 'external_account_number' }],
      external_account_number: imported.externalAccountNumber, service_account_number: imported.serviceAccountNumber,
    }]);
    const skippedDetail = `Account "${skipped.external_account_number}" is marked to be skipped and cannot be staged or created.`;
    assert.deepEqual([skippedRes!.status, skippedRes!.json], [400, {
      detail: skippedDetail, code: 'account_marked_to_skip',
      errors: [{ detail: skippedDetail, code: 'account_marked_to_skip', attr: 'external_account_number' }],
    }]);
    assert.deepEqual([invalidRes!.status, invalidRes!.json], [400, invalidAlone.json]);

    // Stored: every body as sent, byte for byte the jsonb a lone stage stores (the text PostgreSQL
    // makes of the body's own JSON); the account staged 5 times holds the stage answered last (its
    // stages are written in arrival order, each after the one before committed, so the last
    // write's answer is the last of the five to come back).
    for (const body of [...fresh, ...changed]) {
      const same = await sql<{ same: boolean }>`SELECT ai.data::text = ${JSON.stringify(body)}::jsonb::text AS same FROM account_imports ai
        WHERE ai.supplier_id = ${await supplierIdOf(t, tenant.supplier)} AND ai.external_account_number = ${body.external_account_number}`.execute(t.store.db);
      assert.equal(same.rows[0]?.same, true, body.external_account_number);
    }
    const lastRepeated = order.filter((i) => i >= 52 && i < 57).at(-1)!;
    assert.deepEqual(await storedData(tenant, repeatedExt), repeated[lastRepeated - 52]);
    assert.deepEqual(await storedData(tenant, imported.externalAccountNumber), {}, 'the imported account\'s staged data is left alone');
    assert.deepEqual(await storedData(tenant, skipped.external_account_number), skipped, 'the skipped account keeps what it had');

    // One staged event per stage answered 201 or 200, saying which; none for the refused ones.
    const events = (await stagedEvents(tenant)).slice(eventsBefore);
    const succeeded = answers.filter((r) => r.status === 201 || r.status === 200).length;
    assert.equal(succeeded, 57);
    assert.equal(events.length, succeeded);
    const firsts = events.filter((e) => (e.data as { first_staging: boolean }).first_staging).map((e) => e.external_account_number).sort();
    assert.deepEqual(firsts, [...fresh.map((p) => p.external_account_number), repeatedExt].sort());
    assert.equal(events.filter((e) => e.external_account_number === repeatedExt).length, 5);
    for (const refused of [imported.externalAccountNumber, skipped.external_account_number]) {
      assert.equal(events.filter((e) => e.external_account_number === refused).length, 0);
    }
  });

  test('concurrent stages share transactions: fewer distinct transaction ids than stages', async () => {
    const tenant = await createTenant(t);
    const { answers } = await burst(tenant, Array.from({ length: 40 }, () => accountPayload(tenant.supplier)));
    assert.deepEqual(answers.map((r) => r.status), Array(40).fill(201));
    // Each event carries its transaction's id (events.xid defaults to pg_current_xact_id()): stages
    // written one transaction each would show 40 of them.
    const events = await stagedEvents(tenant);
    assert.equal(events.length, 40);
    const transactions = new Set(events.map((e) => e.xid)).size;
    assert.ok(transactions < 40, `40 stages were written in ${transactions} transactions`);
  });

  test('a row the store refuses fails alone: its neighbours in the batch are staged', async () => {
    const tenant = await createTenant(t);
    // A trigger of this test's own database refuses one account number pattern, as the store
    // refuses text it cannot keep (SQLSTATE 22021): the batch statement fails on it.
    const marker = unique('REFUSED').replace('-', '_');
    // The trigger also counts every row write it sees on a sequence, which a rollback does not undo:
    // rows written in the batch that failed are counted twice (the batch, then alone).
    await sql.raw(`CREATE SEQUENCE ${marker}_writes`).execute(t.store.db);
    const rowWrites = async () => Number((await sql<{ n: number }>`SELECT last_value AS n FROM ${sql.raw(`${marker}_writes`)}`.execute(t.store.db)).rows[0]!.n);
    await sql.raw(`CREATE FUNCTION ${marker}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM nextval('${marker}_writes');
        IF NEW.external_account_number LIKE '${marker}%' THEN
          RAISE EXCEPTION 'refused by the test' USING ERRCODE = '22021';
        END IF;
        RETURN NEW;
      END $$`).execute(t.store.db);
    await sql.raw(`CREATE TRIGGER ${marker} BEFORE INSERT OR UPDATE ON account_imports FOR EACH ROW EXECUTE FUNCTION ${marker}()`).execute(t.store.db);
    try {
      const alone = await post(tenant, accountPayload(tenant.supplier, { external_account_number: `${marker}-alone` }));
      assert.deepEqual([alone.status, alone.json], [400, { detail: 'The request holds text or nesting the store cannot keep.', code: 'invalid' }]);
      const writesBefore = await rowWrites();

      const good = Array.from({ length: 20 }, () => accountPayload(tenant.supplier));
      const bad = accountPayload(tenant.supplier, { external_account_number: `${marker}-burst` });
      const { answers } = await burst(tenant, [...good.slice(0, 10), bad, ...good.slice(10)]);
      const badAnswer = answers.splice(10, 1)[0]!;
      assert.deepEqual([badAnswer.status, badAnswer.json], [alone.status, alone.json]);
      answers.forEach((res, i) => assert.deepEqual([res.status, res.json],
        [201, { import_supplier: tenant.supplier, external_account_number: good[i]!.external_account_number }]));
      for (const body of good) assert.deepEqual(await storedData(tenant, body.external_account_number), body);
      assert.equal(await storedData(tenant, bad.external_account_number), undefined);
      const events = await stagedEvents(tenant);
      assert.deepEqual(events.map((e) => e.external_account_number).sort(), good.map((p) => p.external_account_number).sort());
      // The refused row was written with others: 20 good rows once, the refused one in its batch and
      // alone, and the good rows of that batch (sorted before it, EXT-… < REFUSED_…) a second time.
      const burstWrites = await rowWrites() - writesBefore;
      assert.ok(burstWrites > 20 + 2, `the refused row was written with no neighbour (${burstWrites} row writes)`);
    } finally {
      await sql.raw(`DROP TRIGGER ${marker} ON account_imports`).execute(t.store.db);
      await sql.raw(`DROP FUNCTION ${marker}()`).execute(t.store.db);
      await sql.raw(`DROP SEQUENCE ${marker}_writes`).execute(t.store.db);
    }
  });
});
