import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  AccountData, COVER_MATERIALS, ENERGIZATION_STATUSES, METER_BASES, METER_PHASES, METER_STATUSES, REGISTER_TYPES,
  SUPPLY_TYPES, validateAccountData,
} from '../../src/modules/account-data/index.ts';
import { phoneParseDirect, phonePatternsCompiledOnce } from '../../src/modules/account-data/index.ts';
import { insertImportedAccount } from '../support/accounts.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

const URL = '/v1/data-import/validate-account/';
const t = await buildTestApp();
const tenant = await createTenant(t);

const validate = (body: unknown, token = tenant.token) => call(t.app, 'POST', URL, { token, body });
type Mutation = (p: any) => void;
const mutated = (mutate: Mutation) => {
  const p: any = accountPayload(tenant.supplier);
  mutate(p);
  return p;
};
const ELEC = 'supply_addresses.0.supply_points.0';
const elec = (p: any) => p.supply_addresses[0].supply_points[0];
const meter = (p: any) => elec(p).meters[0];

/** A 400 account_failed_validation whose items are exactly `expected` ([code, attr]), in order. */
async function assertRejected(body: unknown, expected: Array<[string, string]>) {
  const res = await validate(body);
  assert.equal(res.status, 400, JSON.stringify(res.json));
  assert.equal(res.json.code, 'account_failed_validation');
  assert.equal(res.json.detail, 'The account data failed validation.');
  assert.deepEqual(Object.keys(res.json).sort(), ['code', 'detail', 'errors']);
  assert.deepEqual(res.json.errors.map((e: any) => [e.code, e.attr]), expected, JSON.stringify(res.json.errors));
  for (const e of res.json.errors) assert.ok(typeof e.detail === 'string' && e.detail.length > 0);
}

describe('validate-account: success', () => {
  test('200 echoes the data exactly as sent, key order included', async () => {
    const payload = accountPayload(tenant.supplier);
    const res = await validate(payload);
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(res.body, JSON.stringify(payload));
  });

  test('200 answers the very text sent: white space, escapes and number forms kept, gzipped or not', async () => {
    const payload: any = accountPayload(tenant.supplier);
    // Pretty-printed, a name with an escaped letter, a multiplier of 1.5 written as 15.0e-1:
    // re-serialising the parsed body would answer none of these as sent.
    const text = JSON.stringify(payload, null, 2)
      .replace('"multiplier": 1.5', '"multiplier": 15.0e-1')
      .replace(`"given_name": "${payload.customers[0].given_name}"`, '"given_name": "Zo\\u00e9"');
    assert.ok(text.includes('15.0e-1') && text.includes('\\u00e9'));
    const headers = { 'content-type': 'application/json' };
    const plain = await call(t.app, 'POST', URL, { token: tenant.token, body: text, headers });
    assert.equal(plain.status, 200, plain.body);
    assert.match(String(plain.headers['content-type']), /^application\/json/);
    assert.equal(plain.body, text);
    const zipped = await call(t.app, 'POST', URL, { token: tenant.token, body: gzipSync(text), headers: { ...headers, 'content-encoding': 'gzip' } });
    assert.equal(zipped.status, 200, zipped.body);
    assert.equal(zipped.body, text);
    // With a byte order mark in front, the answer is the text after it.
    const marked = await call(t.app, 'POST', URL, { token: tenant.token, body: `\ufeff${text}`, headers });
    assert.equal(marked.status, 200, marked.body);
    assert.equal(marked.body, text);
  });

  test('only the fields D5 requires: the rest may be omitted', async () => {
    const minimal = {
      external_account_number: 'EXT-minimal', import_supplier: tenant.supplier,
      billing_address: { street_address: '1 Main St', country: 'FR', postal_code: '75001' },
      customers: [{ given_name: 'Zoé', family_name: 'Martin' }],
      supply_addresses: [{
        supply_address1: '1 Main St', supply_postcode: '75001', supply_points: [
          { supply_type: 'ELECTRICITY', supply_start_date: '2024-02-29', identifier: 'FR-1' },
          { supply_type: 'HEAT_PUMP', supply_start_date: '2024-01-01' },
          { supply_type: 'LIGHT', supply_start_date: '2024-01-01' },
          { supply_type: 'POLE', supply_start_date: '2024-01-01' },
          { supply_type: 'WATER_HEATER', supply_start_date: '2024-01-01' },
        ],
      }],
    };
    const res = await validate(minimal);
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.deepEqual(res.json, minimal);
  });

  test('landline "" and a national landline in the billing country are accepted; empty email too', async () => {
    const p = mutated((p) => {
      p.customers[0].landline = '';
      p.customers[0].email = '';
      p.customers[1].landline = '0117 496 0123';
      p.customers[1].alternative_phone_numbers = [{ phone_number: '020 7946 0018' }, {}];
      p.metadata.push({ key: 'no_value' }, {});
    });
    const res = await validate(p);
    assert.equal(res.status, 200, JSON.stringify(res.json));
  });

  test('a paused supplier still validates: validate-account checks the data alone (D5)', async () => {
    const paused = await createTenant(t, { status: 'paused' });
    const res = await validate(accountPayload(paused.supplier), paused.token);
    assert.equal(res.status, 200);
  });

  test('an account already imported still validates: its state is staging\'s business (D5)', async () => {
    const imported = await insertImportedAccount(t, tenant);
    const res = await validate(accountPayload(tenant.supplier, { external_account_number: imported.externalAccountNumber }));
    assert.equal(res.status, 200);
    assert.equal(res.json.external_account_number, imported.externalAccountNumber);
  });
});

describe('validate-account: the supplier (D3)', () => {
  test('an unknown supplier is 400 import_supplier_not_found at import_supplier', async () => {
    const res = await validate(accountPayload('NO-SUCH-SUPPLIER'));
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, {
      detail: 'No import supplier with code "NO-SUCH-SUPPLIER".', code: 'import_supplier_not_found',
      errors: [{ detail: 'No import supplier with code "NO-SUCH-SUPPLIER".', code: 'import_supplier_not_found', attr: 'import_supplier' }],
    });
  });

  test('another organisation\'s supplier answers exactly as an unknown one', async () => {
    const other = await createTenant(t);
    const res = await validate(accountPayload(other.supplier));
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, {
      detail: `No import supplier with code "${other.supplier}".`, code: 'import_supplier_not_found',
      errors: [{ detail: `No import supplier with code "${other.supplier}".`, code: 'import_supplier_not_found', attr: 'import_supplier' }],
    });
  });

  test('the body is checked before the supplier (D4)', async () => {
    const p = accountPayload('NO-SUCH-SUPPLIER');
    delete (p as any).customers;
    await assertRejected(p, [['required', 'customers']]);
  });

  test('no token: 401 before anything else', async () => {
    const res = await call(t.app, 'POST', URL, { body: {} });
    assert.equal(res.status, 401);
    assert.equal(res.json.code, 'not_authenticated');
  });
});

// One failing payload per D5 rule: [name, mutation, expected [code, attr] items].
const cases: Array<[string, Mutation, Array<[string, string]>]> = [
  // required, at each level
  ['external_account_number required', (p) => delete p.external_account_number, [['required', 'external_account_number']]],
  ['import_supplier required', (p) => delete p.import_supplier, [['required', 'import_supplier']]],
  ['billing_address required', (p) => delete p.billing_address, [['required', 'billing_address']]],
  ['billing fields required', (p) => {
    delete p.billing_address.street_address; delete p.billing_address.country; delete p.billing_address.postal_code;
  }, [['required', 'billing_address.street_address'], ['required', 'billing_address.country'], ['required', 'billing_address.postal_code']]],
  ['customers required', (p) => delete p.customers, [['required', 'customers']]],
  ['customers at least one', (p) => { p.customers = []; }, [['empty', 'customers']]],
  ['customer names required', (p) => { delete p.customers[1].given_name; delete p.customers[1].family_name; },
    [['required', 'customers.1.given_name'], ['required', 'customers.1.family_name']]],
  ['supply_addresses required', (p) => delete p.supply_addresses, [['required', 'supply_addresses']]],
  ['supply address fields required', (p) => {
    const a = p.supply_addresses[1]; delete a.supply_address1; delete a.supply_postcode; delete a.supply_points;
  }, [['required', 'supply_addresses.1.supply_address1'], ['required', 'supply_addresses.1.supply_postcode'], ['required', 'supply_addresses.1.supply_points']]],
  ['supply_type required', (p) => delete elec(p).supply_type, [['required', `${ELEC}.supply_type`]]],
  ['supply_start_date required', (p) => delete p.supply_addresses[1].supply_points[2].supply_start_date,
    [['required', 'supply_addresses.1.supply_points.2.supply_start_date']]],
  ['agreement fields required', (p) => { elec(p).agreements = [{ tariff_code: 'X' }, { effective_from: '2024-01-01' }]; },
    [['required', `${ELEC}.agreements.0.effective_from`], ['required', `${ELEC}.agreements.1.tariff_code`]]],
  ['ELECTRICITY identifier required', (p) => delete elec(p).identifier, [['required', `${ELEC}.identifier`]]],
  ['meter fields required', (p) => { delete meter(p).serial_number; delete meter(p).registers; },
    [['required', `${ELEC}.meters.0.serial_number`], ['required', `${ELEC}.meters.0.registers`]]],
  ['register_type required', (p) => delete meter(p).registers[1].register_type, [['required', `${ELEC}.meters.0.registers.1.register_type`]]],
  ['transfer reading fields required', (p) => { elec(p).transfer_readings = [{}]; }, [
    ['required', `${ELEC}.transfer_readings.0.register_type`], ['required', `${ELEC}.transfer_readings.0.read_date`],
    ['required', `${ELEC}.transfer_readings.0.value`]]],
  // null, blank, types (no coercion)
  ['null', (p) => { p.customers[0].given_name = null; p.billing_address.locality = null; },
    [['null', 'billing_address.locality'], ['null', 'customers.0.given_name']]],
  ['blank', (p) => { p.external_account_number = ''; p.customers[0].family_name = ''; },
    [['blank', 'external_account_number'], ['blank', 'customers.0.family_name']]],
  ['no coercion: "12" is not an integer, "true" not a boolean', (p) => { elec(p).call_number = '12'; p.unknown_occupier = 'true'; },
    [['invalid', `${ELEC}.call_number`], ['invalid', 'unknown_occupier']]],
  ['wrong types', (p) => { p.customers = { given_name: 'A' }; meter(p).meter_number = 1.5; elec(p).transfer_readings[0].value = 12; },
    [['invalid', 'customers'], ['invalid', `${ELEC}.meters.0.meter_number`], ['invalid', `${ELEC}.transfer_readings.0.value`]]],
  ['reading value must hold a number', (p) => { elec(p).transfer_readings[1].value = '6,25'; }, [['invalid', `${ELEC}.transfer_readings.1.value`]]],
  // unknown fields
  ['unknown top-level field', (p) => { p.account_type = 'DOMESTIC'; }, [['unknown_field', 'account_type']]],
  ['unknown nested fields', (p) => { p.billing_address.county = 'Avon'; meter(p).meter_type.colour = 'grey'; },
    [['unknown_field', 'billing_address.county'], ['unknown_field', `${ELEC}.meters.0.meter_type.colour`]]],
  ['a field of another supply-point kind', (p) => {
    p.supply_addresses[1].supply_points[1].identifier = 'X'; elec(p).tank_size = 'BIG';
  }, [['unknown_field', `${ELEC}.tank_size`], ['unknown_field', 'supply_addresses.1.supply_points.1.identifier']]],
  // choices
  ['unknown supply_type', (p) => { elec(p).supply_type = 'GAS'; }, [['invalid_choice', `${ELEC}.supply_type`]]],
  ['supply_type of the wrong type', (p) => { elec(p).supply_type = 5; }, [['invalid', `${ELEC}.supply_type`]]],
  ['enum values', (p) => {
    elec(p).energization_status = 'ON'; meter(p).status = 'BROKEN'; meter(p).meter_type.phase = 'TWO';
    meter(p).registers[0].register_type = 'KWH';
  }, [['invalid_choice', `${ELEC}.energization_status`], ['invalid_choice', `${ELEC}.meters.0.status`],
    ['invalid_choice', `${ELEC}.meters.0.meter_type.phase`], ['invalid_choice', `${ELEC}.meters.0.registers.0.register_type`]]],
  // dates and datetimes
  ['impossible and malformed dates', (p) => { elec(p).supply_start_date = '2023-02-30'; p.customers[0].date_of_birth = '12/04/1980'; },
    [['invalid', 'customers.0.date_of_birth'], ['invalid', `${ELEC}.supply_start_date`]]],
  ['datetime without Z or with an offset', (p) => { p.notes[0].created_at = '2024-01-10T09:30:00'; p.notes[1].created_at = '2024-01-10T09:30:00+01:00'; },
    [['invalid', 'notes.0.created_at'], ['invalid', 'notes.1.created_at']]],
  ['datetime with a time of day or a date that does not exist', (p) => {
    p.notes[0].created_at = '2024-01-10T24:00:00Z';
    p.notes[1].created_at = '2024-01-10T23:60:00Z';
    p.notes[1].unpin_at = '2024-01-10T23:59:60.5Z';
    p.notes.push({ body: 'x', created_at: '2023-02-29T12:00:00Z' }, { body: 'y', created_at: '2024-02-29T23:59:59.999999Z' });
  }, [['invalid', 'notes.0.created_at'], ['invalid', 'notes.1.created_at'], ['invalid', 'notes.1.unpin_at'], ['invalid', 'notes.3.created_at']]],
  ['last_billed_to_date before supply_start_date', (p) => { elec(p).last_billed_to_date = '2019-05-31'; },
    [['invalid_date_range', `${ELEC}.last_billed_to_date`]]],
  // domain codes
  ['country not ISO 3166-1 alpha-2', (p) => { p.billing_address.country = 'ZZ'; }, [['invalid_country', 'billing_address.country']]],
  ['country in lower case', (p) => { p.billing_address.country = 'gb'; }, [['invalid_country', 'billing_address.country']]],
  ['email', (p) => { p.customers[0].email = 'alice@'; }, [['invalid_email', 'customers.0.email']]],
  ['mobile without +', (p) => { p.customers[0].mobile = '07911123456'; }, [['invalid_phone_number', 'customers.0.mobile']]],
  ['malformed landline and alternative number', (p) => {
    p.customers[0].landline = '12ab'; p.customers[0].alternative_phone_numbers[0].phone_number = '+44 12';
  }, [['invalid_phone_number', 'customers.0.landline'], ['invalid_phone_number', 'customers.0.alternative_phone_numbers.0.phone_number']]],
  ['a national landline is read in the billing country', (p) => {
    // A US account has US postcodes (postcodes are read in the billing country too).
    p.billing_address.country = 'US'; p.billing_address.postal_code = '94105';
    for (const address of p.supply_addresses) address.supply_postcode = '94105';
    p.customers[0].landline = '0117 496 0123';
  },
    [['invalid_phone_number', 'customers.0.landline']]],
  ['duplicate electricity identifiers', (p) => { p.supply_addresses[1].supply_points[0].identifier = elec(p).identifier; },
    [['duplicate', 'supply_addresses.1.supply_points.0.identifier']]],
  ['note without body or documents', (p) => { p.notes.push({ created_at: '2024-01-01T00:00:00Z' }, { body: '  ', document_paths: [] }); },
    [['required', 'notes.3'], ['required', 'notes.4']]],
  ['unpin_at needs is_pinned: true', (p) => { p.notes[1].is_pinned = false; }, [['invalid', 'notes.1.unpin_at']]],
  ['document paths are relative', (p) => {
    p.notes[2].document_paths = ['/abs.pdf', 'a/../b.pdf', 'a//b.pdf', 'a\\b.pdf', 'ok/fine.pdf'].map((d) => ({ document_path: d }));
  }, [0, 1, 2, 3].map((i) => ['invalid_document_path', `notes.2.document_paths.${i}.document_path`] as [string, string])],
  // not supported arrays
  ['ledgers, statements and user_details must be empty', (p) => { p.ledgers = [{}]; p.statements = [{}]; p.customers[0].user_details = [{}]; },
    [['not_supported', 'customers.0.user_details'], ['not_supported', 'ledgers'], ['not_supported', 'statements']]],
  // bounds
  ['max_length on strings', (p) => { p.customers[0].given_name = 'x'.repeat(101); p.billing_address.country = 'GBR'; },
    [['max_length', 'billing_address.country'], ['max_length', 'customers.0.given_name']]],
  ['max_length on arrays', (p) => { p.customers = Array.from({ length: 11 }, () => ({ given_name: 'A', family_name: 'B' })); },
    [['max_length', 'customers']]],
  ['numeric bounds', (p) => { elec(p).call_number = -1; meter(p).registers[0].multiplier = 0; meter(p).registers[0].whole_digits = 21; },
    [['min_value', `${ELEC}.call_number`], ['max_value', `${ELEC}.meters.0.registers.0.whole_digits`], ['min_value', `${ELEC}.meters.0.registers.0.multiplier`]]],
  ['secondary_serial_number is a string or null', (p) => { p.supply_addresses[1].supply_points[2].secondary_serial_number = 5; },
    [['invalid', 'supply_addresses.1.supply_points.2.secondary_serial_number']]],
  // external account number (D5)
  ['external_account_number with "/"', (p) => { p.external_account_number = 'EXT/1'; }, [['invalid', 'external_account_number']]],
  ['external_account_number with surrounding spaces', (p) => { p.external_account_number = ' EXT-1 '; }, [['invalid', 'external_account_number']]],
  ['external_account_number with a control character', (p) => { p.external_account_number = 'EXT\t1'; }, [['invalid', 'external_account_number']]],
];

describe('validate-account: one failing payload per rule (D5)', () => {
  for (const [name, mutate, expected] of cases) {
    test(name, () => assertRejected(mutated(mutate), expected));
  }
});

describe('validate-account: UK numbers reserved for drama', () => {
  test('a refused one says it is not a real number (a mobile with its +, a national landline), not that a + is missing', async () => {
    const drama = 'This number is in a UK range reserved for drama and fiction (TV, film, books): it is not a real phone number.';
    const res = await validate(mutated((p) => {
      p.customers[0].mobile = '+44 7700 900123';
      p.customers[0].landline = '01632 960123';
    }));
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, {
      detail: 'The account data failed validation.', code: 'account_failed_validation', errors: [
        { detail: drama, code: 'invalid_phone_number', attr: 'customers.0.mobile' },
        { detail: drama, code: 'invalid_phone_number', attr: 'customers.0.landline' },
      ],
    });
  });

  test('the phone library runs with its metadata patterns compiled once (an upgrade that moves its helper fails here)', () => {
    assert.equal(phonePatternsCompiledOnce, true);
  });

  test('phone numbers are parsed without the public function\'s layers (an upgrade that moves its parse fails here)', () => {
    assert.equal(phoneParseDirect, true);
  });

  test('an invalid number outside those ranges keeps the format message', async () => {
    const res = await validate(mutated((p) => { p.customers[0].mobile = '+44 7911 12'; }));
    assert.deepEqual(res.json.errors, [
      { detail: 'Enter a valid phone number in international format with a leading +.', code: 'invalid_phone_number', attr: 'customers.0.mobile' },
    ]);
  });
});

describe('validate-account: several errors at once', () => {
  test('every error in one answer, in document order', async () => {
    const p = mutated((p) => {
      p.customers[1].mobile = '0791';
      p.external_account_number = 'a/b';
      p.supply_addresses[1].supply_points[3].supply_type = 'TREE';
      p.notes[0].created_at = 'yesterday';
      elec(p).last_billed_to_date = '2019-01-01';
      p.billing_address.country = 'XX';
      delete p.customers[0].family_name;
    });
    await assertRejected(p, [
      ['invalid', 'external_account_number'],
      ['invalid_country', 'billing_address.country'],
      ['required', 'customers.0.family_name'],
      ['invalid_phone_number', 'customers.1.mobile'],
      ['invalid_date_range', `${ELEC}.last_billed_to_date`],
      ['invalid_choice', 'supply_addresses.1.supply_points.3.supply_type'],
      ['invalid', 'notes.0.created_at'],
    ]);
  });

  test('a body that is not an object', async () => {
    await assertRejected([], [['invalid', 'non_field_errors']]);
    await assertRejected(null, [['null', 'non_field_errors']]);
  });
});

describe('the account data schema', () => {
  test('every string has a maxLength (or is an enum or const) and every array a maxItems', () => {
    const missing: string[] = [];
    const walk = (s: any, path: string) => {
      if (!s || typeof s !== 'object') return;
      const types = [s.type].flat();
      if (types.includes('string') && s.maxLength === undefined && !s.enum && s.const === undefined) missing.push(path);
      if (types.includes('array') && s.maxItems === undefined) missing.push(path);
      for (const [k, v] of Object.entries(s.properties ?? {})) walk(v, `${path}.${k}`);
      if (s.items) walk(s.items, `${path}[]`);
      (s.oneOf ?? []).forEach((b: any) => walk(b, `${path}<${b.properties?.supply_type?.const}>`));
    };
    walk(AccountData, '$');
    assert.deepEqual(missing, []);
  });

  test('docs/validation.md lists every enumeration value', () => {
    const doc = readFileSync(new globalThis.URL('../../docs/validation.md', import.meta.url), 'utf8');
    const values = [SUPPLY_TYPES, ENERGIZATION_STATUSES, METER_STATUSES, METER_PHASES, COVER_MATERIALS, METER_BASES, REGISTER_TYPES].flat();
    assert.deepEqual(values.filter((v) => !doc.includes(`\`${v}\``)), []);
  });

  test('never throws and answers valid or field errors, whatever is changed in a payload', () => {
    const base = accountPayload('SUP');
    const paths: Array<Array<string | number>> = [];
    const collect = (v: unknown, path: Array<string | number>) => {
      paths.push(path);
      if (Array.isArray(v)) v.forEach((x, i) => collect(x, [...path, i]));
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) collect(x, [...path, k]);
    };
    collect(base, []);
    fc.assert(fc.property(fc.integer({ min: 1, max: paths.length - 1 }), fc.jsonValue(), (index, value) => {
      const p: any = structuredClone(base);
      const path = paths[index]!;
      const parent = path.slice(0, -1).reduce((o: any, k) => o[k], p);
      parent[path[path.length - 1]!] = value;
      const errors = validateAccountData(p);
      assert.ok(errors === null || (errors.length > 0 && errors.every((e) => e.code && e.attr && e.detail)));
    }), { numRuns: 500 });
  });
});
