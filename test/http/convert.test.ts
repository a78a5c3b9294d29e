import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { after, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { convert } from '../../src/cli/migrate/convert/convert.ts';
import { loadMapping, MappingError } from '../../src/cli/migrate/convert/mapping.ts';
import { JsonNumber, recordJson } from '../../src/cli/migrate/convert/json-text.ts';
import { compileTransform, RowProblem, typed } from '../../src/cli/migrate/convert/transforms.ts';
import { compileValidator } from '../../src/core/validation.ts';
import { validateAccountData } from '../../src/modules/account-data/index.ts';
import { CreateNotesBody } from '../../src/modules/notes/index.ts';
import { CreateStatementsBody } from '../../src/modules/statements/index.ts';
import { CreateTransactionsBody } from '../../src/modules/transactions/index.ts';
import { LEGACY_FILES, PLANTED_ROWS, writeLegacyExport } from '../support/legacy-export.ts';

// import-migrate convert: legacy CSV exports to a book. The command's exit statuses and messages
// are checked on the bin as users run it; the transforms and the join in process.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EXAMPLE = join(ROOT, 'examples/legacy-export');
const dir = mkdtempSync(join(tmpdir(), 'convert-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Run { status: number | null; stdout: string; stderr: string }
function cli(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/import-migrate.js', 'convert', ...args], { cwd: ROOT, timeout: 60_000, env: { ...process.env, IMPORT_API_KEY: '' } },
      (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }));
  });
}

const run = (spec: unknown, value: string | string[]) => compileTransform(spec)(value);
const rejectOf = (f: () => unknown): string => {
  try { f(); } catch (error) { if (error instanceof RowProblem) return error.reason; throw error; }
  return 'no reject';
};
const csvLines = (path: string) => readFileSync(path, 'utf8').trim().split('\n');
const bookLines = (path: string) => (path.endsWith('.gz') ? gunzipSync(readFileSync(path)).toString('utf8') : readFileSync(path, 'utf8')).trim().split('\n');
const mappingAt = async (path: string) => loadMapping(path, readFileSync(path, 'utf8'));

describe('transforms', () => {
  test('trim, upper and lower change the text, also of each item of a list', () => {
    assert.equal(run('trim', '  LS1 4AP '), 'LS1 4AP');
    assert.equal(run('upper', 'ls1 4ap'), 'LS1 4AP');
    assert.equal(run('lower', 'Bob@Example.COM'), 'bob@example.com');
    assert.deepEqual(run('upper', ['a', 'b']), ['A', 'B']);
  });

  test('decimal_comma reads a decimal comma and dot or space thousands; anything else is invalid_number', () => {
    assert.equal(run('decimal_comma', '12,50'), '12.50');
    assert.equal(run('decimal_comma', '1.234,56'), '1234.56');
    assert.equal(run('decimal_comma', '-1 234,5'), '-1234.5');
    assert.equal(run('decimal_comma', '7'), '7');
    assert.equal(rejectOf(() => run('decimal_comma', '12,34,5')), 'invalid_number');
    assert.equal(rejectOf(() => run('decimal_comma', '12.50 EUR')), 'invalid_number');
  });

  test('decimal_comma takes dots, spaces or \' only as thousands groups of three and keeps every digit; anything else is invalid_number', () => {
    assert.equal(run('decimal_comma', '1.000.000,5'), '1000000.5');
    assert.equal(run('decimal_comma', "1'234,56"), '1234.56');
    assert.equal(run('decimal_comma', '+1.000'), '1000');
    assert.equal(run('decimal_comma', '12,999999999999999999'), '12.999999999999999999');
    // A dot decimal, comma thousands, groups not of three, two kinds of separator: other amounts
    // than the one meant (12.50 read as 1250), so refused.
    for (const text of ['1,000.00', '12.50', '1.2.3,4', '1.23,4', '1234.567,8', '1 000.000,5']) assert.equal(rejectOf(() => run('decimal_comma', text)), 'invalid_number', text);
  });

  test('numbers reach the book with the digits written, not as the nearest double', () => {
    const money = { type: 'money' } as const;
    const record = {
      amounts: ['12.999999999999999999', '0.1000000000000000001', '-007.50', '0', '100000.000'].map((t) => typed(t, money, 'AMOUNT')),
      size: typed('12345678901234567890', { type: 'integer' }, 'SIZE'), note: 'a "quoted" text', gone: undefined, pinned: false,
    };
    assert.equal(recordJson(record), '{"amounts":[12.999999999999999999,0.1000000000000000001,-7.5,0,100000],"size":12345678901234567890,"note":"a \\"quoted\\" text","pinned":false}');
  });

  test('date reads its format into YYYY-MM-DD (with a time: a UTC datetime); an impossible date is invalid_date', () => {
    assert.equal(run({ date: '%d/%m/%Y' }, '31/12/2023'), '2023-12-31');
    assert.equal(run({ date: '%d/%m/%Y' }, '1/2/2024'), '2024-02-01');
    assert.equal(run({ date: '%d.%m.%y' }, '05.06.79'), '1979-06-05');
    assert.equal(run({ date: '%d/%m/%Y %H:%M' }, '29/02/2024 09:05'), '2024-02-29T09:05:00Z');
    assert.equal(rejectOf(() => run({ date: '%d/%m/%Y' }, '31/02/2024')), 'invalid_date');
    assert.equal(rejectOf(() => run({ date: '%d/%m/%Y' }, '2024-02-01')), 'invalid_date');
    assert.equal(rejectOf(() => run({ date: '%d/%m/%Y %H:%M' }, '01/02/2024 24:00')), 'invalid_date');
  });

  test('a compact date format (directives side by side) takes exactly its width; a value one digit short is invalid_date, not some other date', () => {
    assert.equal(run({ date: '%d%m%Y' }, '01112024'), '2024-11-01');
    assert.equal(run({ date: '%Y%m%d' }, '20240111'), '2024-01-11');
    assert.equal(run({ date: '%Y-%m-%d %H%M' }, '2024-01-11 0905'), '2024-01-11T09:05:00Z');
    // Read with one digit allowed for the day or month, 1112024 was 2024-01-11 (or 2024-11-01).
    assert.equal(rejectOf(() => run({ date: '%d%m%Y' }, '1112024')), 'invalid_date');
    assert.equal(rejectOf(() => run({ date: '%Y%m%d' }, '2024111')), 'invalid_date');
    assert.equal(rejectOf(() => run({ date: '%Y-%m-%d %H%M' }, '2024-01-11 905')), 'invalid_date');
  });

  test('map replaces a code; a code not in the map is unmapped_code', () => {
    assert.equal(run({ map: { E: 'ELECTRICITY', G: 'GAS' } }, 'G'), 'GAS');
    assert.equal(rejectOf(() => run({ map: { E: 'ELECTRICITY' } }, 'X')), 'unmapped_code');
  });

  test('split makes a list of the trimmed, non-empty parts', () => {
    assert.deepEqual(run({ split: '|' }, 'KWH_IMPORT| KWH_EXPORT|'), ['KWH_IMPORT', 'KWH_EXPORT']);
  });

  test('a transform written wrongly is refused when the mapping is read', () => {
    assert.throws(() => compileTransform('titlecase'), /unknown transform "titlecase"/);
    assert.throws(() => compileTransform('date'), /date needs an argument/);
    assert.throws(() => compileTransform({ date: '%d/%q/%Y' }), /unknown directive %q/);
    assert.throws(() => compileTransform({ map: ['E'] }), /map takes a mapping/);
    assert.throws(() => compileTransform({ trim: true }), /trim takes no argument/);
  });

  test('the target type turns the text into JSON: booleans from yes/no words, numbers, datetimes', () => {
    assert.equal(typed('Y', { type: 'boolean' }, 'PINNED'), true);
    assert.equal(typed('no', { type: 'boolean' }, 'PINNED'), false);
    assert.equal(rejectOf(() => typed('maybe', { type: 'boolean' }, 'PINNED')), 'invalid_boolean');
    assert.equal(typed('12.50', { type: 'money' }, 'AMOUNT'), 12.5);
    assert.deepEqual(typed('12.999999999999999999', { type: 'money' }, 'AMOUNT'), new JsonNumber('12.999999999999999999'));
    assert.equal(rejectOf(() => typed('12,50', { type: 'money' }, 'AMOUNT')), 'invalid_number');
    assert.equal(rejectOf(() => typed('1.5', { type: 'integer' }, 'SIZE')), 'invalid_number');
    assert.equal(typed('2024-02-01', { type: 'datetime' }, 'NOTE_DATE'), '2024-02-01T00:00:00Z');
  });
});

describe('the example export', () => {
  const out = join(dir, 'example.ndjson.gz');
  let converted: Run;

  test('converts with exit 1, saying how many rows were rejected and where', async () => {
    converted = await cli('--mapping', join(EXAMPLE, 'mapping.yaml'), '--out', out);
    assert.equal(converted.stderr, '');
    assert.equal(converted.status, 1);
    assert.match(converted.stdout, new RegExp(`^300 records written to ${out}\n${PLANTED_ROWS.length} rows rejected \\(.*\\): see ${out}.rejects.csv\n`));
  });

  test('every record passes the service\'s own validation: the account, and each history part with its endpoint\'s body schema', () => {
    const validators = {
      transactions: compileValidator(CreateTransactionsBody), statements: compileValidator(CreateStatementsBody), notes: compileValidator(CreateNotesBody),
    };
    const lines = bookLines(out);
    assert.equal(lines.length, 300);
    const counts = { transactions: 0, statements: 0, notes: 0 };
    for (const line of lines) {
      const record = JSON.parse(line);
      assert.equal(validateAccountData(record.account), null, line.slice(0, 200));
      for (const part of ['transactions', 'statements', 'notes'] as const) {
        if (!record[part]) continue;
        counts[part] += record[part].length;
        const body = { import_supplier: record.account.import_supplier, external_account_number: record.account.external_account_number, [part]: record[part] };
        assert.equal(validators[part](body), null, `${part} of ${record.account.external_account_number}`);
      }
    }
    // 6 transactions, 1 statement a account and a note every 4th; the planted rows are not there.
    assert.deepEqual(counts, { transactions: 1800, statements: 300, notes: 75 });
    // The check is not vacuous: a record with a broken field fails it.
    const first = JSON.parse(lines[0]!);
    first.account.customers[0].date_of_birth = '1951-02-30';
    assert.equal(validateAccountData(first.account)?.[0]?.code, 'invalid');
  });

  test('the records keep the accounts file\'s order and what each row said', () => {
    const records = bookLines(out).map((line) => JSON.parse(line));
    assert.deepEqual(records.map((r) => r.account.external_account_number),
      csvLines(join(EXAMPLE, 'accounts.csv')).slice(1, 301).map((line) => line.split(';')[0]));
    const leg4 = records.find((r) => r.account.external_account_number === 'LEG0000004');
    assert.deepEqual(leg4.account.supply_addresses, [{
      supply_address1: '5 High Street', supply_postcode: 'EH1 1YZ',
      supply_points: [{
        supply_type: 'ELECTRICITY', identifier: '1000000000028', supply_start_date: '2024-01-05',
        agreements: [{ tariff_code: 'FIX-24M', effective_from: '2024-01-05' }],
        meters: [{ serial_number: 'S00000004A', status: 'ACTIVE', registers: [{ register_type: 'KWH_IMPORT' }, { register_type: 'KWH_EXPORT' }] }],
      }],
    }]);
    assert.deepEqual(leg4.notes, [{ created_at: '2024-01-05T09:04:00Z', body: 'Moved in; meter read taken', is_pinned: false }]);
    assert.deepEqual(leg4.transactions.slice(0, 2).map((t: any) => [t.type, t.reason, t.product_code, t.transaction_date]),
      [['SUPPLY_CHARGE', undefined, 'ELEC-STD', '2024-03-05'], ['PAYMENT', 'ACCOUNT_CHARGE_PAYMENT', undefined, '2024-03-05']]);
    assert.equal(records.find((r) => r.account.external_account_number === 'LEG0000003').transactions[0].product_code, 'GAS-STD');
    // A rejected child row leaves the rest of its account: LEG0000010 keeps its one good customer.
    assert.deepEqual(records.find((r) => r.account.external_account_number === 'LEG0000010').account.customers.map((c: any) => c.given_name), ['Alice']);
  });

  test('each planted broken row, and only those, is in the rejects file with its file, row, column and reason', () => {
    const [header, ...rows] = csvLines(`${out}.rejects.csv`);
    assert.equal(header, 'file,row,key,column,reason,detail');
    const got = rows.map((line) => line.split(',').slice(0, 5).join(',')).sort();
    const expected = PLANTED_ROWS.map((p) => {
      const row = csvLines(join(EXAMPLE, `${p.file}.csv`)).indexOf(p.row) + 1;
      // A row with a field too many still names the key it carries.
      const key = p.reason === 'malformed_row' ? p.row.split(';')[0] : p.key;
      return [`${p.file}.csv`, row, key, p.column, p.reason].join(',');
    }).sort();
    assert.deepEqual(got, expected);
    // Every reason the command knows is shown by the example.
    assert.deepEqual(new Set(PLANTED_ROWS.map((p) => p.reason)), new Set(['required', 'invalid_date', 'invalid_number', 'invalid_boolean',
      'unmapped_code', 'orphan', 'duplicate_key', 'malformed_row', 'account_rejected']));
    assert.ok(rows.includes('statements.csv,302,LEG0000015,PERIOD_FROM,invalid_date,"""01/13/2024"" is not a date in the format %d/%m/%Y"'), rows.join('\n'));
  });
});

describe('a bad mapping: exit 2 with the mapping line at fault, before any row is read', () => {
  const example = readFileSync(join(EXAMPLE, 'mapping.yaml'), 'utf8');
  const lineOf = (text: string) => example.split('\n').findIndex((l) => l.includes(text)) + 1;
  const bad = async (name: string, edit: (yaml: string) => string): Promise<Run> => {
    const folder = join(dir, name);
    mkdirSync(folder);
    for (const file of Object.keys(LEGACY_FILES)) copyFileSync(join(EXAMPLE, `${file}.csv`), join(folder, `${file}.csv`));
    writeFileSync(join(folder, 'mapping.yaml'), edit(example));
    return cli('--mapping', join(folder, 'mapping.yaml'), '--out', join(folder, 'book.ndjson'));
  };
  const expect = (result: Run, line: number, message: RegExp) => {
    assert.equal(result.status, 2, result.stderr);
    assert.equal(result.stdout, '');
    const [, file, at, text] = /^import-migrate: bad mapping: (.*):(\d+): (.*)\n$/.exec(result.stderr) ?? [];
    assert.match(file!, /mapping\.yaml$/);
    assert.equal(Number(at), line, result.stderr);
    assert.match(text!, message);
  };

  test('an unknown target field, an unknown transform, a missing file, a key column missing from a file', async () => {
    const [field, transform, file, key] = await Promise.all([
      bad('field', (y) => y.replace('      mobile: MOBILE', '      mobile_phone: MOBILE')),
      bad('transform', (y) => y.replace('transform: [trim, lower]}', 'transform: [trim, lowercase]}')),
      bad('file', (y) => y.replace('path: meters.csv', 'path: meter-readings.csv')),
      bad('key', (y) => y.replace('    path: notes.csv', '    path: notes.csv\n    key: ACCOUNT_NUMBER')),
    ]);
    expect(field, lineOf('      mobile: MOBILE'), /^unknown target field "mobile_phone" for customers \(known: given_name, family_name, email, mobile, /);
    expect(transform, lineOf('transform: [trim, lower]}'), /^unknown transform "lowercase" \(known: trim, upper, lower, decimal_comma, date, map, split\)$/);
    expect(file, lineOf('path: meters.csv'), /^file .*meter-readings\.csv does not exist or cannot be read$/);
    expect(key, lineOf('    path: notes.csv') + 1, /^column "ACCOUNT_NUMBER" is not in the header of notes\.csv \(ACCOUNT_NO, NOTE_DATE, NOTE_TEXT, PINNED\)$/);
    // Nothing was written: the mapping is checked before any output.
    assert.throws(() => readFileSync(join(dir, 'field', 'book.ndjson')), /ENOENT/);
  });

  test('other mistakes name their line too (in process)', async () => {
    const folder = join(dir, 'in-process');
    mkdirSync(folder);
    for (const file of Object.keys(LEGACY_FILES)) copyFileSync(join(EXAMPLE, `${file}.csv`), join(folder, `${file}.csv`));
    const check = async (yaml: string, message: RegExp) => {
      writeFileSync(join(folder, 'mapping.yaml'), yaml);
      await assert.rejects(mappingAt(join(folder, 'mapping.yaml')), (error: Error) => {
        assert.ok(error instanceof MappingError);
        assert.match(error.message, message);
        return true;
      });
    };
    await check(example.replace('      number: STATEMENT_NO\n', ''), /mapping\.yaml:\d+: statements needs a source for the required field number$/);
    await check(example.replace('{column: DOB, transform: {date: "%d/%m/%Y"}}', '{column: DOB, transform: {date: "%d/%q/%Y"}}'), new RegExp(`mapping\\.yaml:${lineOf('      date_of_birth')}: date format "%d/%q/%Y": unknown directive %q`));
    await check(example.replace('  notes:\n', '  readings:\n'), new RegExp(`mapping\\.yaml:${lineOf('  notes:')}: unknown file kind "readings"`));
    await check(example.replace('      serial_number: METER_SERIAL', '      serial_number: SERIAL'), new RegExp(`mapping\\.yaml:${lineOf('serial_number: METER_SERIAL')}: column "SERIAL" is not in the header of meters\\.csv`));
    await check(example.replace('    link: MPAN\n    fields:\n      serial_number', '    fields:\n      serial_number'), /meters rows name their supply point: give link/);
    await check('files: [accounts.csv', /mapping\.yaml:1: Flow sequence in block collection must be sufficiently indented and end with a \]$/);
  });
});

describe('sorted and unsorted inputs', () => {
  const exportOf = async (name: string, order: 'sorted' | 'shuffled') => {
    const folder = join(dir, name);
    mkdirSync(folder);
    await writeLegacyExport({ dir: folder, accounts: 60, transactionsPerAccount: 5, order, messy: true, seed: 7 });
    copyFileSync(join(EXAMPLE, 'mapping.yaml'), join(folder, 'mapping.yaml'));
    return folder;
  };

  test('give the same book: byte for byte when only the child files are unsorted, in the accounts file\'s order when it is too', async () => {
    const sorted = await exportOf('sorted', 'sorted');
    const shuffled = await exportOf('shuffled', 'shuffled');
    const children = join(dir, 'children-shuffled');
    mkdirSync(children);
    for (const file of Object.keys(LEGACY_FILES)) copyFileSync(join(file === 'accounts' ? sorted : shuffled, `${file}.csv`), join(children, `${file}.csv`));
    copyFileSync(join(EXAMPLE, 'mapping.yaml'), join(children, 'mapping.yaml'));

    // Tiny sort chunks: many runs, merged in more than one round.
    const summaries = [];
    for (const folder of [sorted, shuffled, children]) {
      summaries.push(await convert(await mappingAt(join(folder, 'mapping.yaml')), { out: join(folder, 'book.ndjson'), sortChunkBytes: 1024 }));
    }
    assert.deepEqual(summaries.map((s) => [s.records, s.rejects]), [[60, 0], [60, 0], [60, 0]]);
    assert.deepEqual(summaries.map((s) => s.sortedOnDisk.length), [0, 8, 7]);
    const [a, b, c] = [sorted, shuffled, children].map((folder) => readFileSync(join(folder, 'book.ndjson'), 'utf8'));
    assert.equal(c, a);
    assert.notEqual(b, a);
    assert.deepEqual(b!.trim().split('\n').sort(), a!.trim().split('\n').sort());
    assert.deepEqual(b!.trim().split('\n').map((l) => JSON.parse(l).account.external_account_number),
      csvLines(join(shuffled, 'accounts.csv')).slice(1).map((l) => l.split(';')[0]));
  });
});

describe('a clean export', () => {
  test('converts with exit 0, saying no row was rejected and naming no rejects file', async () => {
    const folder = join(dir, 'clean');
    mkdirSync(folder);
    await writeLegacyExport({ dir: folder, accounts: 12, transactionsPerAccount: 2, order: 'sorted', seed: 3 });
    copyFileSync(join(EXAMPLE, 'mapping.yaml'), join(folder, 'mapping.yaml'));
    const out = join(folder, 'book.ndjson');
    const result = await cli('--mapping', join(folder, 'mapping.yaml'), '--out', out);
    assert.equal(result.stderr, '');
    assert.equal(result.status, 0, result.stdout);
    assert.equal(result.stdout, `12 records written to ${out}\n0 rows rejected\n`);
    assert.doesNotMatch(result.stdout, /rejects\.csv|see /);
    assert.equal(bookLines(out).length, 12);
  });
});

describe('--init', () => {
  test('prints a starting mapping from the headers: every target listed, the obvious columns filled in', async () => {
    const files = ['accounts', 'customers', 'supply_points', 'transactions', 'notes'].map((f) => join(EXAMPLE, `${f}.csv`));
    const result = await cli('--init', ...files);
    assert.equal(result.status, 0, result.stderr);
    const mapping = parseYaml(result.stdout);
    assert.equal(mapping.key, 'ACCOUNT_NO');
    assert.deepEqual(Object.keys(mapping.files), ['accounts', 'customers', 'supply_points', 'transactions', 'notes']);
    assert.deepEqual(mapping.files.customers, {
      path: files[1], csv: { delimiter: ';' },
      fields: { given_name: 'FORENAME', family_name: 'SURNAME', email: 'EMAIL', mobile: 'MOBILE', landline: 'HOME_PHONE', date_of_birth: 'DOB' },
    });
    assert.equal(mapping.files.supply_points.link, 'MPAN');
    assert.equal(mapping.files.accounts.fields['billing_address.postal_code'], 'POSTCODE');
    // The fields it could not match are listed as comments to fill in.
    assert.match(result.stdout, /\n {6}# import_supplier: {2}# required\n/);
    assert.match(result.stdout, /\n {6}# customer_preferences\.opted_into_offers:\n/);
    // A starting point, not a finished mapping: the required fields still need a source.
    writeFileSync(join(dir, 'init.yaml'), result.stdout);
    await assert.rejects(mappingAt(join(dir, 'init.yaml')), /accounts needs a source for the required field import_supplier/);
  });

  test('usage errors exit 2', async () => {
    const [none, both, stray, nowhere] = await Promise.all([cli(), cli('--init', '--out', 'x'), cli('--mapping', 'm.yaml', '--out', 'b.ndjson', '--supplier', 'X'),
      cli('--mapping', join(EXAMPLE, 'mapping.yaml'), '--out', join(dir, 'no-such-folder', 'book.ndjson'))]);
    assert.deepEqual([none.status, both.status, stray.status, nowhere.status], [2, 2, 2, 2]);
    assert.match(nowhere.stderr, /^import-migrate: cannot write to .*no-such-folder; usage:/);
    assert.match(none.stderr, /^import-migrate: give --mapping and --out; usage: import-migrate convert --mapping/);
    assert.match(stray.stderr, /^import-migrate: --supplier does not apply to convert/);
  });
});

describe('awkward files', () => {
  // A small export (accounts, customers, transactions) with its mapping, converted in process.
  const MAPPING = `key: ACC
files:
  accounts:
    path: accounts.csv
    fields:
      external_account_number: ACC
      import_supplier: {value: DEMO}
      billing_address.street_address: STREET
      billing_address.country: {value: GB}
      billing_address.postal_code: PC
  customers:
    path: customers.csv
    fields: {given_name: GIVEN, family_name: FAMILY}
  transactions:
    path: transactions.csv
    fields:
      transaction_id: TID
      transaction_date: {column: TDATE, transform: {date: "%d/%m/%Y"}}
      amount: AMOUNT
      type: {value: SUPPLY_CHARGE}
`;
  const ACCOUNTS = 'ACC,STREET,PC\nA1,1 High St,LS1 4AP\nA2,2 High St,LS1 4AP\nA3,3 High St,LS1 4AP\n';
  const CUSTOMERS = 'ACC,GIVEN,FAMILY\nA1,Bob,Smith\nA2,Ann,Jones\nA3,Cy,Brown\n';
  const TRANSACTIONS = 'ACC,TID,TDATE,AMOUNT\n';
  const exportOf = (name: string, files: { accounts?: string | Buffer; customers?: string | Buffer; transactions?: string }, mapping = MAPPING) => {
    const folder = join(dir, name);
    mkdirSync(folder);
    writeFileSync(join(folder, 'accounts.csv'), files.accounts ?? ACCOUNTS);
    writeFileSync(join(folder, 'customers.csv'), files.customers ?? CUSTOMERS);
    writeFileSync(join(folder, 'transactions.csv'), files.transactions ?? TRANSACTIONS);
    writeFileSync(join(folder, 'mapping.yaml'), mapping);
    return folder;
  };
  const convertExport = async (folder: string, sortChunkBytes?: number) => {
    const out = join(folder, 'book.ndjson');
    const summary = await convert(await mappingAt(join(folder, 'mapping.yaml')), { out, ...(sortChunkBytes ? { sortChunkBytes } : {}) });
    const lines = summary.records === 0 ? [] : bookLines(out);
    const records = lines.map((line) => JSON.parse(line));
    const customersOf = (account: string) => records.find((r) => r.account.external_account_number === account)?.account.customers.map((c: any) => c.given_name);
    return { summary, lines, records, customersOf, rejects: csvLines(`${out}.rejects.csv`).slice(1) };
  };

  test('an amount keeps its digits in the book: the service, not a double, judges its decimal places', async () => {
    const { lines, summary } = await convertExport(exportOf('digits', { transactions: `${TRANSACTIONS}A1,T1,01/03/2024,12.999999999999999999\nA1,T2,01/03/2024,0.1000000000000000001\nA1,T3,01/03/2024,10.50\n` }));
    assert.equal(summary.rejects, 0);
    assert.match(lines[0]!, /"amount":12\.999999999999999999,.*"amount":0\.1000000000000000001,.*"amount":10\.5,/);
  });

  test('bytes that are not UTF-8 reject the row as invalid_encoding, naming the column and the encoding setting; with encoding latin1 they are read', async () => {
    const customers = Buffer.concat([Buffer.from('ACC,GIVEN,FAMILY\nA1,Bob,Smith\nA2,Zo'), Buffer.from([0xeb]), Buffer.from(',M'), Buffer.from([0xfc]), Buffer.from('ller\nA3,Cy,Brown\n')]);
    const utf8 = await convertExport(exportOf('latin1-as-utf8', { customers }));
    assert.deepEqual(utf8.rejects, ['customers.csv,3,A2,GIVEN,invalid_encoding,"GIVEN has bytes that are not UTF-8 (read as ""Zo\uFFFD""); '
      + 'if the file is Windows-1252 (most exports from Windows) give encoding: windows-1252 in the mapping\'s csv settings, if it is Latin-1 (ISO-8859-1) encoding: latin1"']);
    assert.deepEqual(utf8.customersOf('A2'), []);
    assert.doesNotMatch(utf8.lines.join('\n'), /\uFFFD/);
    const latin1 = await convertExport(exportOf('latin1', { customers }, MAPPING.replace('key: ACC\n', 'key: ACC\ncsv: {encoding: latin1}\n')));
    assert.equal(latin1.summary.rejects, 0);
    assert.deepEqual(latin1.records[1].account.customers[0], { given_name: 'Zoë', family_name: 'Müller' });
  });

  test('a Windows-1252 export: read with encoding windows-1252 (its 0x80-0x9F as Windows has them); read as Latin-1 its rows are refused, not stored with control characters', async () => {
    // O’Neil (0x92), €uro (0x80), and a byte Windows-1252 leaves undefined (0x81).
    const customers = Buffer.concat([Buffer.from('ACC,GIVEN,FAMILY\nA1,Bob,O'), Buffer.from([0x92]), Buffer.from('Neil\nA2,'), Buffer.from([0x80]),
      Buffer.from('uro,Jones\nA3,C'), Buffer.from([0x81]), Buffer.from('y,Brown\n')]);
    const windows = await convertExport(exportOf('windows-1252', { customers }, MAPPING.replace('key: ACC\n', 'key: ACC\ncsv: {encoding: windows-1252}\n')));
    assert.deepEqual(windows.records[0].account.customers[0], { given_name: 'Bob', family_name: 'O\u2019Neil' });
    assert.deepEqual(windows.customersOf('A2'), ['\u20acuro']);
    assert.deepEqual(windows.rejects, ['customers.csv,4,A3,GIVEN,invalid_encoding,"GIVEN has the byte 0x81, which Windows-1252 does not define"']);
    // cp1252 is another name for it.
    const cp1252 = await convertExport(exportOf('cp1252', { customers }, MAPPING.replace('key: ACC\n', 'key: ACC\ncsv: {encoding: cp1252}\n')));
    assert.deepEqual([cp1252.records, cp1252.rejects], [windows.records, windows.rejects]);
    const latin1 = await convertExport(exportOf('windows-1252-as-latin1', { customers }, MAPPING.replace('key: ACC\n', 'key: ACC\ncsv: {encoding: latin1}\n')));
    assert.deepEqual(latin1.records.map((r) => r.account.customers), [[], [], []]);
    assert.deepEqual(latin1.rejects.map((line) => line.split(',').slice(0, 5).join(',')), [
      'customers.csv,2,A1,FAMILY,invalid_encoding', 'customers.csv,3,A2,GIVEN,invalid_encoding', 'customers.csv,4,A3,GIVEN,invalid_encoding']);
    assert.match(latin1.rejects[0]!, /FAMILY has bytes 0x80-0x9F, control characters in Latin-1 \(read as ""O\u0092Neil""\); an export from Windows is usually Windows-1252: give encoding: windows-1252/);
    assert.doesNotMatch(latin1.lines.join('\n'), /[\u0080-\u009f]/);
    // A broken row's account number is read in the file's encoding too: its children go with it, not as orphans.
    const key = Buffer.concat([Buffer.from('O'), Buffer.from([0x92]), Buffer.from('1')]);
    const broken = await convertExport(exportOf('windows-1252-broken', {
      accounts: Buffer.concat([Buffer.from('ACC,STREET,PC\n'), key, Buffer.from(',"1" High St,LS1 4AP\nP2,2 High St,LS1 4AP\n')]),
      customers: Buffer.concat([Buffer.from('ACC,GIVEN,FAMILY\n'), key, Buffer.from(',Bob,Smith\nP2,Ann,Jones\n')]),
    }, MAPPING.replace('key: ACC\n', 'key: ACC\ncsv: {encoding: windows-1252}\n')));
    assert.deepEqual(broken.rejects.map((line) => line.split(',').slice(0, 5).join(',')), [
      'accounts.csv,2,O\u20191,,malformed_row', 'customers.csv,2,O\u20191,,account_rejected']);
  });

  test('a file that is UTF-8 throughout keeps a U+FFFD of its own, and a character cut by the read\'s 64 KiB chunks is not taken for a bad byte', async () => {
    // '€' (3 bytes) placed across the first chunk's end, then a name that holds U+FFFD as text.
    const head = 'ACC,GIVEN,FAMILY\n';
    const filler: string[] = [];
    let bytes = Buffer.byteLength(head);
    for (let n = 1; bytes < 65_536 - 200; n++) {
      const row = `F${String(n).padStart(5, '0')},Pad,Row\n`;
      filler.push(row);
      bytes += row.length;
    }
    const before = `A1,${'x'.repeat(65_535 - bytes - 'A1,'.length)}`;
    const customers = `${head}${filler.join('')}${before}€,Smith\nA2,Zo\uFFFD,Brown\n`;
    assert.equal(Buffer.from(customers).indexOf(Buffer.from('€')), 65_535, 'the euro sign straddles the first 64 KiB');
    const accounts = `ACC,STREET,PC\n${['A1', 'A2', ...filler.map((row) => row.slice(0, 6))].sort().map((acc) => `${acc},1 High St,LS1 4AP`).join('\n')}\n`;
    const { rejects, customersOf, records } = await convertExport(exportOf('utf8-throughout', { accounts, customers }));
    assert.deepEqual(rejects, []);
    assert.equal(customersOf('A1')[0]!.slice(-1), '€');
    assert.deepEqual(customersOf('A2'), ['Zo\uFFFD']);
    assert.equal(records.length, filler.length + 2);
  });

  test('a quote never closed rejects the row it opened on, by that line, and the rows after it are read', async () => {
    const { rejects, customersOf, summary } = await convertExport(exportOf('unclosed-quote', { customers: 'ACC,GIVEN,FAMILY\nA1,Bob,Smith\n\nA2,"Ann,Jones\nA2,Al,Jones\nA3,Cy,Brown\n' }));
    assert.deepEqual(rejects, ['customers.csv,4,A2,,malformed_row,a quote opened on line 4 is never closed; reading goes on at line 5']);
    assert.equal(summary.records, 3);
    assert.deepEqual([customersOf('A1'), customersOf('A2'), customersOf('A3')], [['Bob'], ['Al'], ['Cy']]);
  });

  test('text after a closing quote rejects that row alone, with its account number and its children; the rows up to the next quote are read', async () => {
    // csv-parse, skipping such a row, reads on as if its quote were still open: every row up to the
    // next quote in the file (here C1's) was swallowed with it, unreported.
    const middle = Array.from({ length: 30 }, (_, i) => `B${String(i + 1).padStart(2, '0')},${i + 1} Mid St,LS1 4AP`);
    const accounts = `ACC,STREET,PC\nA0,"Flat 1" High St,LS1 4AP\n${middle.join('\n')}\nC1,"Flat 2" Low St,LS1 4AP\nD1,4 High St,LS1 4AP\n`;
    const customers = `ACC,GIVEN,FAMILY\nA0,Al,Smith\n${middle.map((row) => `${row.split(',')[0]},Bo,Jones`).join('\n')}\nC1,"Cy" x,Brown\nC1,Di,Brown\nD1,Ed,Green\n`;
    const { records, rejects, customersOf, summary } = await convertExport(exportOf('stray-closing-quote', { accounts, customers }));
    assert.deepEqual(records.map((r) => r.account.external_account_number), [...middle.map((row) => row.split(',')[0]), 'D1']);
    assert.deepEqual(rejects, [
      'accounts.csv,2,A0,,malformed_row,"text after the quote that closes a field (field 2): double a quote inside a quoted field ("""")"',
      'customers.csv,2,A0,,account_rejected,its account (accounts.csv row 2) was rejected',
      'accounts.csv,33,C1,,malformed_row,"text after the quote that closes a field (field 2): double a quote inside a quoted field ("""")"',
      'customers.csv,33,C1,,account_rejected,its account (accounts.csv row 33) was rejected',
      'customers.csv,34,C1,,account_rejected,its account (accounts.csv row 33) was rejected',
    ]);
    assert.equal(summary.rejects, 5);
    assert.deepEqual([customersOf('B30'), customersOf('D1')], [['Bo'], ['Ed']]);
  });

  test('a quote inside a field that does not start with one rejects that row with its account number, in the rejects\' words', async () => {
    const { records, rejects } = await convertExport(exportOf('stray-opening-quote', {
      accounts: 'ACC,STREET,PC\nA1,1 "High" St,LS1 4AP\nA2,2 High St,LS1 4AP\nA3,3 High St,LS1 4AP\n',
    }));
    assert.deepEqual(records.map((r) => r.account.external_account_number), ['A2', 'A3']);
    assert.deepEqual(rejects, [
      'accounts.csv,2,A1,,malformed_row,"a quote inside a field that does not start with one (field 2): double a quote inside a quoted field ("""")"',
      'customers.csv,2,A1,,account_rejected,its account (accounts.csv row 2) was rejected',
    ]);
  });

  test('a stray quote that leaves a quote open over several lines rejects its row at its first line, and the lines it ran over with it: every line is in the book or the rejects, none taken unchecked (LF, CRLF, a child file)', async () => {
    // A2's `""` keeps its quote open; csv-parse read on to A4's quote and found the problem there
    // (line 5): A3 and A4 were lost, in neither the book nor the rejects. A3's line may as well be
    // A2's own text (a multi-line value with a typo on its last line): rejected with it, not taken.
    const accounts = 'ACC,STREET,PC\nA1,1 High St,LS1 4AP\nA2,"2 High St"",LS1 4AP\nA3,3 High St,LS1 4AP\nA4,"4 High" St,LS1 4AP\nA5,5 High St,LS1 4AP\n';
    const transactions = 'ACC,TID,TDATE,AMOUNT\r\nA1,T1,01/03/2024,1.00\r\nA1,"T2"",01/03/2024,2.00\r\nA1,T3,01/03/2024,3.00\r\nA5,"T4" x,01/03/2024,4.00\r\nA5,T5,01/03/2024,5.00\r\n';
    const { records, rejects, summary } = await convertExport(exportOf('stray-quote-left-open', { accounts, customers: 'ACC,GIVEN,FAMILY\n', transactions }));
    assert.deepEqual(records.map((r) => [r.account.external_account_number, (r.transactions ?? []).map((t: any) => t.transaction_id)]),
      [['A1', ['T1']], ['A5', ['T5']]]);
    const ranOn = 'text after the quote that closes a field (field 2) found on line 5, in a row starting on line 3 (a quote left open ran it on): '
      + 'double a quote inside a quoted field (""""); reading goes on at line 4';
    const inside = 'read inside the row starting on line 3, which could not be read (a quote left open ran it on to line 5): '
      + 'it may be that row\'s own text, so it is not taken; check it against the file';
    const ownQuote = 'text after the quote that closes a field (field 2): double a quote inside a quoted field ("""")';
    assert.deepEqual(rejects, [
      `transactions.csv,3,A1,,malformed_row,"${ranOn}"`,
      `transactions.csv,4,A1,,malformed_row,"${inside}"`,
      `accounts.csv,3,A2,,malformed_row,"${ranOn}"`,
      `accounts.csv,4,A3,,malformed_row,"${inside}"`,
      `accounts.csv,5,A4,,malformed_row,"${ownQuote}"`,
      `transactions.csv,5,A5,,malformed_row,"${ownQuote}"`,
    ]);
    // 5 accounts rows and 5 transactions rows: each in the book or the rejects.
    assert.equal(summary.rejects, 6);
  });

  test('a row\'s line counts LF line ends only: a CRLF, or a CR alone, inside a quoted value moves no later row\'s number', async () => {
    // csv-parse counted a CR as a line end, a CRLF inside quotes as two: these were rows 6, 8 and 9.
    const { rejects } = await convertExport(exportOf('line-ends-in-quotes', {
      accounts: 'ACC,STREET,PC\r\nA1,"1 High St\r\nFlat 2\r\nBack",\r\nA2,"2 High St\rRear",\r\nA3,3 High St,\r\n', customers: 'ACC,GIVEN,FAMILY\n',
    }));
    assert.deepEqual(rejects, [
      'accounts.csv,4,A1,PC,required,PC is empty and billing_address.postal_code is required',
      'accounts.csv,5,A2,PC,required,PC is empty and billing_address.postal_code is required',
      'accounts.csv,6,A3,PC,required,PC is empty and billing_address.postal_code is required',
    ]);
  });

  test('a CR alone outside quotes is no line end: the row is rejected at its own line, the detail quoting the start of the text it took in', async () => {
    const { records, rejects } = await convertExport(exportOf('lone-cr', { accounts: 'ACC,STREET,PC\nA1,1 High St,LS1 4AP\rA2,2 High Street,LS1 4AP\nA3,3 High St,LS1 4AP\n' }));
    assert.deepEqual(records.map((r) => r.account.external_account_number), ['A3']);
    assert.deepEqual(rejects, [
      'accounts.csv,2,A1,,malformed_row,"5 fields where the header has 3: a CR alone (not a line end) is in the row, so the text after it (""A2,2 High Street,LS1…"") was read as part of this row"',
      'customers.csv,2,A1,,account_rejected,its account (accounts.csv row 2) was rejected',
      'customers.csv,3,A2,ACC,orphan,no account A2 in the accounts file',
    ]);
  });

  test('--out naming an input file, or putting its rejects file on one, is a usage error (exit 2) that leaves every file as it was', async () => {
    const mappingText = MAPPING.replace('path: customers.csv', 'path: old.rejects.csv');
    const folder = exportOf('out-is-input', { transactions: `${TRANSACTIONS}A1,T1,01/03/2024,1.00\n` }, mappingText);
    writeFileSync(join(folder, 'old.rejects.csv'), CUSTOMERS);
    symlinkSync(join(folder, 'accounts.csv'), join(folder, 'link.csv'));
    linkSync(join(folder, 'accounts.csv'), join(folder, 'hard.csv'));
    const mapping = join(folder, 'mapping.yaml');
    const [input, dotted, linked, rejectsFile, mappingFile, hard] = await Promise.all([
      cli('--mapping', mapping, '--out', join(folder, 'transactions.csv')), cli('--mapping', mapping, '--out', `${folder}/./accounts.csv`),
      cli('--mapping', mapping, '--out', join(folder, 'link.csv')), cli('--mapping', mapping, '--out', join(folder, 'old')), cli('--mapping', mapping, '--out', mapping),
      cli('--mapping', mapping, '--out', join(folder, 'hard.csv')),
    ]);
    assert.deepEqual([input, dotted, linked, rejectsFile, mappingFile, hard].map((r) => [r.status, r.stdout]), Array(6).fill([2, '']));
    const overwritten = 'it would be overwritten before it is read; write the book elsewhere; usage: import-migrate convert --mapping MAPPING.yaml --out BOOK.ndjson[.gz]; '
      + 'import-migrate convert --init ACCOUNTS.csv [CHILD.csv …]\n';
    assert.equal(input.stderr, `import-migrate: --out ${join(folder, 'transactions.csv')} is the transactions file transactions.csv: ${overwritten}`);
    assert.equal(dotted.stderr, `import-migrate: --out ${folder}/./accounts.csv is the accounts file accounts.csv: ${overwritten}`);
    assert.equal(linked.stderr, `import-migrate: --out ${join(folder, 'link.csv')} is the accounts file accounts.csv: ${overwritten}`);
    // A hard link is the same file under another path.
    assert.equal(hard.stderr, `import-migrate: --out ${join(folder, 'hard.csv')} is the accounts file accounts.csv: ${overwritten}`);
    assert.equal(rejectsFile.stderr,
      `import-migrate: --out ${join(folder, 'old')} writes its rejects to ${join(folder, 'old.rejects.csv')}, which is the customers file old.rejects.csv: ${overwritten}`);
    assert.equal(mappingFile.stderr, `import-migrate: --out ${mapping} is the mapping file: ${overwritten}`);
    assert.deepEqual(['accounts.csv', 'old.rejects.csv', 'transactions.csv', 'mapping.yaml'].map((f) => readFileSync(join(folder, f), 'utf8')),
      [ACCOUNTS, CUSTOMERS, `${TRANSACTIONS}A1,T1,01/03/2024,1.00\n`, mappingText]);
    assert.throws(() => readFileSync(join(folder, 'old')), /ENOENT/);
  });

  test('the meters of a rejected supply point are supply_point_rejected, naming its row, not orphans', async () => {
    const folder = exportOf('point-rejected', {}, `${MAPPING}  supply_points:
    path: supply_points.csv
    link: MPAN
    fields:
      supply_address1: SITE
      supply_postcode: PC
      supply_type: {value: ELECTRICITY}
      identifier: MPAN
      supply_start_date: {column: START, transform: {date: "%Y-%m-%d"}}
  meters:
    path: meters.csv
    link: MPAN
    fields: {serial_number: SERIAL}
`);
    writeFileSync(join(folder, 'supply_points.csv'), 'ACC,MPAN,SITE,PC,START\nA1,1000000000001,1 High St,LS1 4AP,2024-13-01\nA2,1000000000002,2 High St,LS1 4AP,2024-01-05\n');
    writeFileSync(join(folder, 'meters.csv'), 'ACC,MPAN,SERIAL\nA1,1000000000001,S1\nA1,1000000000009,S9\nA2,1000000000002,S2\n');
    const { records, rejects } = await convertExport(folder);
    assert.deepEqual(rejects, [
      'supply_points.csv,2,A1,START,invalid_date,"""2024-13-01"" is not a date in the format %Y-%m-%d"',
      'meters.csv,2,A1,,supply_point_rejected,"its supply point ""1000000000001"" (supply_points.csv row 2) was rejected"',
      'meters.csv,3,A1,MPAN,orphan,"no supply point ""1000000000009"" on account A1"',
    ]);
    assert.deepEqual(records.map((r) => r.account.supply_addresses.flatMap((a: any) => a.supply_points.flatMap((p: any) => (p.meters ?? []).map((m: any) => m.serial_number)))),
      [[], ['S2'], []]);
  });

  test('a required value its transforms leave empty is required, as an empty cell is', async () => {
    const mapping = MAPPING.replace('fields: {given_name: GIVEN, family_name: FAMILY}', 'fields: {given_name: GIVEN, family_name: {column: FAMILY, transform: {split: ";"}}}');
    const { rejects, customersOf } = await convertExport(exportOf('emptied', { customers: 'ACC,GIVEN,FAMILY\nA1,Bob,Smith\nA2,Ann,;;\nA3,Cy,Brown\n' }, mapping));
    assert.deepEqual(rejects, ['customers.csv,3,A2,FAMILY,required,FAMILY is empty after its transforms and family_name is required']);
    assert.deepEqual([customersOf('A1'), customersOf('A2'), customersOf('A3')], [['Bob'], [], ['Cy']]);
  });

  test('a line of spaces, or of delimiters only, is blank: no row and no reject', async () => {
    const { records, rejects, summary } = await convertExport(exportOf('blank-looking', {
      accounts: `${ACCOUNTS}   \n,,\n`, customers: `ACC,GIVEN,FAMILY\nA1,Bob,Smith\n \t \nA2,Ann,Jones\nA3,Cy,Brown\n,,\n`,
    }));
    assert.deepEqual(rejects, []);
    assert.deepEqual(summary.sortedOnDisk, []);
    assert.deepEqual(records.map((r) => r.account.customers.map((c: any) => c.given_name)), [['Bob'], ['Ann'], ['Cy']]);
  });

  test('LF, CRLF and both in one file: one row a line, no \\r in any value', async () => {
    const { records, rejects } = await convertExport(exportOf('line-endings', {
      accounts: 'ACC,STREET,PC\r\nA1,1 High St,LS1 4AP\r\nA2,2 High St,LS1 4AP\nA3,3 High St,LS1 4AP\r\n',
      customers: 'ACC,GIVEN,FAMILY\nA1,Bob,Smith\r\nA2,Ann,Jones\nA3,Cy,Brown\r\n',
    }));
    assert.deepEqual(rejects, []);
    assert.deepEqual(records.map((r) => [r.account.external_account_number, r.account.billing_address.postal_code, r.account.customers[0].family_name]),
      [['A1', 'LS1 4AP', 'Smith'], ['A2', 'LS1 4AP', 'Jones'], ['A3', 'LS1 4AP', 'Brown']]);
  });

  test('duplicate_key is judged on the account number as mapped, and child rows join on it too', async () => {
    const { records, rejects, customersOf } = await convertExport(exportOf('mapped-key', {
      accounts: 'ACC,STREET,PC\nA1,1 High St,LS1 4AP\nA1 ,1b High St,LS1 4AP\na1,1c High St,LS1 4AP\nb2,2 High St,LS1 4AP\n',
      customers: 'ACC,GIVEN,FAMILY\na1 ,Bob,Smith\nB2,Ann,Jones\n',
    }, MAPPING.replace('external_account_number: ACC', 'external_account_number: {column: ACC, transform: [trim, upper]}')));
    assert.deepEqual(rejects, [
      'accounts.csv,3,A1 ,ACC,duplicate_key,account A1 is already on row 2',
      'accounts.csv,4,a1,ACC,duplicate_key,account A1 is already on row 2',
    ]);
    assert.deepEqual(records.map((r) => r.account.external_account_number), ['A1', 'B2']);
    assert.deepEqual([customersOf('A1'), customersOf('B2')], [['Bob'], ['Ann']]);
  });

  test('a key holding a line break (a quoted field) goes through the on-disk sort', async () => {
    const { records, summary } = await convertExport(exportOf('key-line-break', {
      accounts: 'ACC,STREET,PC\nB1,1 High St,LS1 4AP\n"C1\nX\\\\",3 High St,LS1 4AP\nA1,2 High St,LS1 4AP\n',
      customers: 'ACC,GIVEN,FAMILY\n"C1\nX\\\\",Cy,Brown\nA1,Ann,Jones\n',
    }), 16);
    assert.deepEqual(summary.sortedOnDisk, ['accounts', 'customers']);
    assert.deepEqual(records.map((r) => [r.account.external_account_number, r.account.customers.map((c: any) => c.given_name)]),
      [['B1', []], ['C1\nX\\\\', ['Cy']], ['A1', ['Ann']]]);
  });

  test('the rejects file defuses spreadsheet formulas in the legacy text', async () => {
    const { rejects } = await convertExport(exportOf('formula', { accounts: `${ACCOUNTS}"=HYPERLINK(""http://x"")",4 High St,\n@SUM(1),5 High St,\n` }));
    assert.deepEqual(rejects, [
      'accounts.csv,5,"\'=HYPERLINK(""http://x"")",PC,required,PC is empty and billing_address.postal_code is required',
      "accounts.csv,6,'@SUM(1),PC,required,PC is empty and billing_address.postal_code is required",
    ]);
  });

  test('a mapped column named twice in a header, an empty data file, or one whose lines end in CR alone, is a bad mapping naming the file', async () => {
    const twice = exportOf('header-twice', { accounts: 'ACC,STREET,PC,STREET\nA1,1 High St,LS1 4AP,x\n' });
    await assert.rejects(mappingAt(join(twice, 'mapping.yaml')), /mapping\.yaml:8: column "STREET" is in the header of accounts\.csv more than once \(ACC, STREET, PC, STREET\): rename one$/);
    const empty = exportOf('empty-file', { customers: '' });
    await assert.rejects(mappingAt(join(empty, 'mapping.yaml')), /mapping\.yaml:12: the data file .*customers\.csv is empty: it needs at least its header line$/);
    // Lines ending in CR alone read as one line: said so, rather than as the mapped columns missing.
    const mac = exportOf('cr-only', { customers: 'ACC,GIVEN,FAMILY\rA1,Bob,Smith\rA2,Ann,Jones\r' });
    await assert.rejects(mappingAt(join(mac, 'mapping.yaml')),
      /mapping\.yaml:12: the data file .*customers\.csv has lines that end in CR alone \(an old Mac export\): convert its line ends to LF or CRLF$/);
    // A header that cannot be read as CSV: said so, not skipped (its next line was taken for the header, then read again as a row).
    const header = exportOf('broken-header', { customers: 'ACC,"GIVEN" x,FAMILY\nA1,Bob,Smith\n' });
    await assert.rejects(mappingAt(join(header, 'mapping.yaml')),
      /mapping\.yaml:12: the data file .*customers\.csv has a header line that cannot be read as CSV: text after the quote that closes a field \(field 2\): double a quote inside a quoted field \(""\)$/);
    // A UTF-8 file (its byte order mark says so) declared Windows-1252 would be read as mojibake: refused.
    const bom = exportOf('bom-as-cp1252', { customers: '\uFEFFACC,GIVEN,FAMILY\nA1,Zo\u00eb,M\u00fcller\n' }, MAPPING.replace('key: ACC\n', 'key: ACC\ncsv: {encoding: windows-1252}\n'));
    await assert.rejects(mappingAt(join(bom, 'mapping.yaml')), /mapping\.yaml:\d+: the data file .*customers\.csv starts with a UTF-8 byte order mark, so it is UTF-8, but the mapping gives encoding: windows-1252: leave encoding out \(UTF-8 is the default\)$/);
  });
});
