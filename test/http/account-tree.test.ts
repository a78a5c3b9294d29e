import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { insertAccountWithTree, type AccountTreeRows } from '../../src/modules/account-imports/index.ts';
import { newAccountRow } from '../support/accounts.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';

// A created account and its rows go in as one statement, each table's rows as one jsonb parameter
// (account-tree.repository.ts): no bind-parameter limit to batch around, children joined to their
// parents by position, ids in position order, nothing written when the number is taken. On PGlite
// and on PostgreSQL.
const t = await buildTestApp();
const db = t.store.db;

function bigTree(): AccountTreeRows {
  const rows: AccountTreeRows = {
    customers: Array.from({ length: 6_000 }, (_, position) => ({
      position, given_name: `Given ${position}`, family_name: 'Family', email: null, mobile: null, landline: null,
      alternative_phone_numbers: position === 1 ? [{ number: '+447700900123' }] : [], date_of_birth: position === 0 ? '1980-02-29' : null,
      opted_into_updates: true, opted_into_offers: null, opted_into_sms: false,
    })),
    addresses: [0, 1].map((position) => ({
      position, supply_address1: `${position} High Street`, supply_address2: null, supply_address3: null, supply_address4: null,
      supply_postcode: 'SW1A 1AA', customer_at_supply_address_from_date: null,
    })),
    points: [], agreements: [], meters: [], registers: [], readings: [],
    notes: [
      { body: 'first', document_paths: ['a/b.pdf'], created_at: '2020-01-02T03:04:05Z', is_pinned: true, unpin_at: null },
      { body: null, document_paths: [], created_at: null, is_pinned: false, unpin_at: null },
    ],
  };
  for (const address of [0, 1]) {
    for (const point of [0, 1, 2]) {
      rows.points.push({
        address, point, supply_type: 'ELECTRICITY', supply_start_date: '2020-01-01', last_billed_to_date: null,
        identifier: `${address}${point}${Date.now()}${Math.random().toString().slice(2, 8)}`, details: { mpan_type: `A${address}P${point}` },
      });
      // 20,000 agreements in all: 80,000 parameters as a multi-row INSERT, past PostgreSQL's 65,535.
      for (let position = 0; position < 3_334 && rows.agreements.length < 20_000; position += 1) {
        rows.agreements.push({ address, point, position, tariff_code: `T-${address}-${point}-${position}`, effective_from: '2020-01-01' });
      }
      rows.readings.push({ address, point, position: 0, register_type: 'DAY', read_date: '2020-01-01', value: `${address * 10 + point}.5` });
      for (const meter of [0, 1]) {
        rows.meters.push({
          address, point, position: meter, serial_number: `S-${address}-${point}-${meter}`, subgroup: null, seal_date: null,
          meter_number: meter, status: 'ACTIVE', active_from: null, meter_type: { manufacturer: `M${meter}` },
        });
        for (const position of [0, 1]) {
          rows.registers.push({
            address, point, meter, position, register_type: `R-${address}-${point}-${meter}-${position}`, whole_digits: 5,
            decimal_digits: null, active_from: null, multiplier: '1.5',
          });
        }
      }
    }
  }
  return rows;
}

describe('the account tree, one statement', () => {
  test('a tree past the bind-parameter limit is written whole, each child under its own parent, in position order', async () => {
    const tenant = await createTenant(t);
    const account = await newAccountRow(t, tenant);
    const importId = account.account_import_id;
    const made = await db.transaction().execute((trx) => insertAccountWithTree(trx, account, bigTree()));
    assert.ok(made);
    const accountId = made.id;

    const linked = await db.selectFrom('account_imports').select('account_id').where('id', '=', importId).executeTakeFirstOrThrow();
    assert.equal(linked.account_id, accountId);

    const customers = await db.selectFrom('customers').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
    assert.equal(customers.length, 6_000);
    assert.deepEqual(customers.map((c) => c.position), customers.map((_, i) => i), 'ids follow positions');
    assert.deepEqual(customers.slice(0, 2).map((c) => [c.given_name, c.date_of_birth, c.alternative_phone_numbers, c.opted_into_updates, c.opted_into_offers, c.opted_into_sms]), [
      ['Given 0', '1980-02-29', [], true, null, false],
      ['Given 1', null, [{ number: '+447700900123' }], true, null, false],
    ]);

    const addresses = await db.selectFrom('supply_addresses').select(['id', 'position']).where('account_id', '=', accountId).orderBy('id').execute();
    assert.deepEqual(addresses.map((a) => a.position), [0, 1]);
    const points = await db.selectFrom('supply_points').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
    const where = (id: number) => {
      const p = points.find((x) => x.id === id)!;
      return `${addresses.find((a) => a.id === p.supply_address_id)!.position}/${p.position}`;
    };
    assert.deepEqual(points.map((p) => [where(p.id), p.details]), [0, 1].flatMap((a) => [0, 1, 2].map((p) => [`${a}/${p}`, { mpan_type: `A${a}P${p}` }])));

    const agreements = await db.selectFrom('agreements').selectAll().where('supply_point_id', 'in', points.map((p) => p.id)).orderBy('id').execute();
    assert.equal(agreements.length, 20_000);
    for (const a of agreements) assert.equal(a.tariff_code, `T-${where(a.supply_point_id).replace('/', '-')}-${a.position}`);

    const readings = await db.selectFrom('transfer_readings').selectAll().where('supply_point_id', 'in', points.map((p) => p.id)).orderBy('id').execute();
    assert.deepEqual(readings.map((r) => [where(r.supply_point_id), r.value]), [0, 1].flatMap((a) => [0, 1, 2].map((p) => [`${a}/${p}`, `${a * 10 + p}.5`])));

    const meters = await db.selectFrom('meters').selectAll().where('supply_point_id', 'in', points.map((p) => p.id)).orderBy('id').execute();
    assert.deepEqual(meters.map((m) => [m.serial_number, `S-${where(m.supply_point_id).replace('/', '-')}-${m.position}`]), meters.map((m) => [m.serial_number, m.serial_number]));
    assert.deepEqual(meters.slice(0, 2).map((m) => m.meter_type), [{ manufacturer: 'M0' }, { manufacturer: 'M1' }]);
    const registers = await db.selectFrom('registers').selectAll().where('meter_id', 'in', meters.map((m) => m.id)).orderBy('id').execute();
    assert.equal(registers.length, 24);
    for (const r of registers) {
      const meter = meters.find((m) => m.id === r.meter_id)!;
      assert.equal(r.register_type, `R-${where(meter.supply_point_id).replace('/', '-')}-${meter.position}-${r.position}`);
      assert.equal(r.multiplier, '1.5');
    }

    const notes = await db.selectFrom('notes').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
    assert.deepEqual(notes.map((n) => [n.body, n.document_paths, n.is_pinned]), [['first', ['a/b.pdf'], true], [null, [], false]]);
    assert.equal(notes[0]!.created_at.toISOString(), '2020-01-02T03:04:05.000Z');
    assert.ok(Math.abs(notes[1]!.created_at.getTime() - Date.now()) < 60_000, 'a note without created_at takes the transaction\'s time');
  });

  test('an empty tree writes the account alone and links the import', async () => {
    const tenant = await createTenant(t);
    const account = await newAccountRow(t, tenant);
    const empty: AccountTreeRows = { customers: [], addresses: [], points: [], agreements: [], meters: [], registers: [], readings: [], notes: [] };
    const made = await db.transaction().execute((trx) => insertAccountWithTree(trx, account, empty));
    assert.ok(made);
    const linked = await db.selectFrom('account_imports').select('account_id').where('id', '=', account.account_import_id).executeTakeFirstOrThrow();
    assert.equal(linked.account_id, made.id);
    assert.equal((await db.selectFrom('customers').select('id').where('account_id', '=', made.id).execute()).length, 0);
  });

  test('a number already taken writes nothing at all: no account, no rows under it, no link', async () => {
    const tenant = await createTenant(t);
    const first = await newAccountRow(t, tenant);
    assert.ok(await db.transaction().execute((trx) => insertAccountWithTree(trx, first, bigTree())));
    const second = await newAccountRow(t, tenant, first.number);
    const made = await db.transaction().execute((trx) => insertAccountWithTree(trx, second, bigTree()));
    assert.equal(made, undefined);
    const accounts = await db.selectFrom('accounts').select('external_account_number').where('number', '=', first.number).execute();
    assert.deepEqual(accounts.map((a) => a.external_account_number), [first.external_account_number]);
    const linked = await db.selectFrom('account_imports').select('account_id').where('id', '=', second.account_import_id).executeTakeFirstOrThrow();
    assert.equal(linked.account_id, null);
    const customers = await db.selectFrom('customers').innerJoin('accounts', 'accounts.id', 'customers.account_id')
      .select((eb) => eb.fn.countAll<number>().as('n')).where('accounts.supplier_id', '=', first.supplier_id).executeTakeFirstOrThrow();
    assert.equal(Number(customers.n), 6_000, 'only the first account\'s customers');
  });
});
