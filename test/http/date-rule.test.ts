import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { insertImportedAccount } from '../support/accounts.ts';
import { STAGE_URL } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

// The one date rule (issue #14, src/core/dates.ts): every date and datetime from 1900-01-01 to
// 2100-12-31, a date of birth not in the future, so nothing that passes validation fails in SQL;
// open statement periods compared as dates.
const t = await buildTestApp();
const tenant = await createTenant(t);
const VALIDATE_URL = '/v1/data-import/validate-account/';
const STATEMENTS_URL = '/v1/data-import/historical-statements/create/';
const TRANSACTIONS_URL = '/v1/data-import/transactions/create/';
const ELEC = 'supply_addresses.0.supply_points.0';
const BEFORE = 'Ensure this date is on or after 1900-01-01.';
const AFTER = 'Ensure this date is on or before 2100-12-31.';

const statement = (id: string, from: string, to: string) => ({
  bill_period_from_date: from, bill_period_to_date: to, statement_id: id, issued_date: from, number: `No-${id}`, gross_amount: 1,
});

describe('one date rule for every date and datetime', () => {
  test('account data: years 0000 and 9999, a birth date in the future or before 1900 are refused at validate and stage', async () => {
    const p: any = accountPayload(tenant.supplier);
    p.supply_addresses[0].supply_points[0].supply_start_date = '0000-01-01';
    p.supply_addresses[0].supply_points[0].last_billed_to_date = '9999-12-31';
    p.customers[0].date_of_birth = '2100-01-01';
    p.customers[1].date_of_birth = '1899-12-31';
    p.notes = [{ body: 'x', created_at: '0001-01-01T00:00:00Z', is_pinned: true, unpin_at: '9999-12-31T23:59:59Z' }];
    const expected = {
      detail: 'The account data failed validation.',
      code: 'account_failed_validation',
      errors: [
        { code: 'max_value', detail: 'Ensure this date is not in the future.', attr: 'customers.0.date_of_birth' },
        { code: 'min_value', detail: BEFORE, attr: 'customers.1.date_of_birth' },
        { code: 'min_value', detail: BEFORE, attr: `${ELEC}.supply_start_date` },
        { code: 'max_value', detail: AFTER, attr: `${ELEC}.last_billed_to_date` },
        { code: 'min_value', detail: 'Ensure this datetime is on or after 1900-01-01.', attr: 'notes.0.created_at' },
        { code: 'max_value', detail: 'Ensure this datetime is on or before 2100-12-31.', attr: 'notes.0.unpin_at' },
      ],
    };
    for (const url of [VALIDATE_URL, STAGE_URL]) {
      const res = await call(t.app, 'POST', url, { token: tenant.token, body: p });
      assert.equal(res.status, 400, res.body);
      assert.deepEqual(res.json, expected);
    }
  });

  test('the bounds themselves are accepted, and today as a date of birth', async () => {
    const p: any = accountPayload(tenant.supplier);
    p.supply_addresses[0].supply_points[0].supply_start_date = '1900-01-01';
    p.supply_addresses[0].supply_points[0].last_billed_to_date = '2100-12-31';
    p.customers[0].date_of_birth = new Date().toISOString().slice(0, 10);
    p.customers[1].date_of_birth = '1900-01-01';
    const res = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: p });
    assert.equal(res.status, 200, res.body);
  });

  test('a statement ending 9999-12-31 is refused; one ending on a leap day closes the period as a date', async () => {
    const account = await insertImportedAccount(t, tenant);
    const body = (statements: unknown[]) => ({ import_supplier: tenant.supplier, external_account_number: account.externalAccountNumber, statements });
    const far = await call(t.app, 'POST', STATEMENTS_URL, { token: tenant.token, body: body([statement('S-FAR', '9999-01-01', '9999-12-31')]) });
    assert.equal(far.status, 400);
    assert.deepEqual(far.json, {
      detail: 'The request failed validation.', code: 'invalid',
      errors: [
        { code: 'max_value', detail: AFTER, attr: 'statements.0.bill_period_from_date' },
        { code: 'max_value', detail: AFTER, attr: 'statements.0.bill_period_to_date' },
        { code: 'max_value', detail: AFTER, attr: 'statements.0.issued_date' },
      ],
    });
    // A statement is history (its period ended by today): the latest day one may end is today, so the
    // open period's first day, the day after, is computed as a date across a leap day here.
    const last = await call(t.app, 'POST', STATEMENTS_URL, { token: tenant.token, body: body([statement('S-LAST', '2024-02-01', '2024-02-29')]) });
    assert.equal(last.status, 201, last.body);

    const early = { transaction_id: 'T-EARLY', transaction_date: '2024-02-29', amount: 1, type: 'CHARGE', reason: 'IMPORTED_CHARGE' };
    const res = await call(t.app, 'POST', `${TRANSACTIONS_URL}?force_add_to_current_statement=false`, {
      token: tenant.token, body: { import_supplier: tenant.supplier, external_account_number: account.externalAccountNumber, transactions: [early] },
    });
    assert.equal(res.status, 400, res.body);
    const detail = 'Transaction "T-EARLY" is dated 2024-02-29, before the open statement period, which starts 2024-03-01.';
    assert.deepEqual(res.json, {
      detail, code: 'TRANSACTION_IMPORT_ERROR',
      errors: [{ code: 'TRANSACTION_IMPORT_ERROR', detail, attr: 'transactions.0.transaction_date' }],
      status: 'TRANSACTION_IMPORT_ERROR', error_detail: detail, transaction_data: { ...early, amount: '1.00' },
    });
  });

  test('transaction and line item dates outside the range are refused before any SQL', async () => {
    const account = await insertImportedAccount(t, tenant);
    const res = await call(t.app, 'POST', TRANSACTIONS_URL, {
      token: tenant.token,
      body: { import_supplier: tenant.supplier, external_account_number: account.externalAccountNumber, transactions: [
        { transaction_id: 'T-0', transaction_date: '0000-01-01', amount: 1, type: 'SUPPLY_CHARGE', product_code: 'P',
          line_items: [{ rate_band: 'R', start_date: '1899-12-31', end_date: '2101-01-01', number_of_units: 1, net_amount: 1, price_per_unit: 1 }] },
      ] },
    });
    assert.equal(res.status, 400, res.body);
    assert.deepEqual(res.json, {
      detail: 'The request failed validation.', code: 'invalid',
      errors: [
        { code: 'min_value', detail: BEFORE, attr: 'transactions.0.transaction_date' },
        { code: 'min_value', detail: BEFORE, attr: 'transactions.0.line_items.0.start_date' },
        { code: 'max_value', detail: AFTER, attr: 'transactions.0.line_items.0.end_date' },
      ],
    });
  });
});
