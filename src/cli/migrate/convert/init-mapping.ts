import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import { stringify } from 'yaml';
import { readHeader } from './csv-rows.ts';
import { FILE_KINDS, POINT_CHILDREN, TARGETS, type FileKind } from './targets.ts';

// `convert --init`: a starting mapping from the files' headers. Each file's kind is guessed from its
// name, every target field is listed, and a field whose name (or a usual synonym) is a column of the
// file is filled in; the others are left as comments to fill or delete.

const KIND_WORDS: [FileKind, RegExp][] = [
  ['customers', /customer|contact|person/], ['supply_points', /supply|point|mpan|premise|site/], ['meters', /meter|register/],
  ['agreements', /agreement|tariff|contract/], ['transactions', /transaction|payment|ledger|txn/],
  ['statements', /statement|bill|invoice/], ['notes', /note|comment|memo/], ['accounts', /account/],
];

const SYNONYMS: Record<string, string[]> = {
  external_account_number: ['accountnumber', 'accountno', 'accno', 'acctno', 'account', 'accountref', 'accountid'],
  street_address: ['address', 'address1', 'addr1', 'street', 'addressline1'],
  locality: ['town', 'city', 'address2'],
  postal_code: ['postcode', 'zip', 'zipcode'],
  supply_postcode: ['postcode', 'sitepostcode'],
  supply_address1: ['address1', 'siteaddress', 'address'],
  given_name: ['firstname', 'forename'],
  family_name: ['surname', 'lastname'],
  mobile: ['mobilephone', 'mobileno', 'cell'],
  landline: ['phone', 'telephone', 'homephone'],
  date_of_birth: ['dob', 'birthdate'],
  supply_type: ['fuel', 'fueltype', 'type'],
  identifier: ['mpan', 'mprn', 'spid', 'supplypoint'],
  supply_start_date: ['startdate', 'supplystart'],
  transaction_id: ['txnid', 'transactionref', 'id'],
  transaction_date: ['date', 'txndate', 'postingdate'],
  amount: ['amt', 'value'],
  gross_amount: ['amount', 'total', 'gross'],
  tariff_code: ['tariff'],
  effective_from: ['fromdate', 'startdate'],
  serial_number: ['meterserial', 'msn', 'serial'],
  body: ['note', 'text', 'comment'],
  created_at: ['date', 'created', 'createddate'],
};

const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');

function kindOf(path: string, first: boolean): FileKind | undefined {
  if (first) return 'accounts';
  const name = basename(path).toLowerCase();
  return KIND_WORDS.find(([kind, words]) => kind !== 'accounts' && words.test(name))?.[0];
}

/** The delimiter of a file: whichever of , ; tab | the header line has most of. */
async function sniffDelimiter(path: string): Promise<string> {
  const handle = await open(path);
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(4096), 0, 4096, 0);
    const line = buffer.subarray(0, bytesRead).toString('utf8').split(/\r?\n/)[0] ?? '';
    return [',', ';', '\t', '|'].map((d) => [d, line.split(d).length] as const).sort((a, b) => b[1] - a[1])[0]![0];
  } finally {
    await handle.close();
  }
}

function match(target: string, header: string[], used: Set<string>): string | undefined {
  const last = target.replace(/.*[.\]]/, '');
  const wanted = [norm(target), norm(last), ...(SYNONYMS[last] ?? [])];
  for (const want of wanted) {
    const found = header.find((h) => norm(h) === want && !used.has(h));
    if (found) return found;
  }
  return undefined;
}

export async function initMapping(paths: string[]): Promise<string> {
  const out: string[] = [
    '# import-migrate convert mapping: fill in the commented fields you need and delete the others.',
    '# A source is a column name, {column: NAME, transform: …} or {value: CONSTANT}. Transforms: trim, upper,',
    '# lower, decimal_comma, {date: "%d/%m/%Y"}, {map: {E: ELECTRICITY}}, {split: ";"}; a list applies them in order.',
  ];
  const files: string[] = [];
  let key: string | undefined;
  for (const [i, path] of paths.entries()) {
    const kind = kindOf(path, i === 0);
    const delimiter = await sniffDelimiter(path);
    const header = await readHeader(path, { delimiter });
    if (i === 0) key = match('external_account_number', header, new Set()) ?? header[0];
    if (!kind) {
      files.push(`  # ${path}: kind not recognised from its name (${FILE_KINDS.join(', ')}); columns: ${header.join(', ')}`);
      continue;
    }
    files.push(`  ${kind}:`, `    path: ${stringify(path).trim()}`);
    if (!header.includes(key!)) files.push(`    key: ${stringify(header[0]).trim()}  # the column holding the account number`);
    if (delimiter !== ',') files.push(`    csv: {delimiter: ${stringify(delimiter).trim()}}`);
    if (kind === 'supply_points' || POINT_CHILDREN.includes(kind as never)) {
      const link = match('identifier', header, new Set());
      files.push(`    link: ${link ? stringify(link).trim() : 'SUPPLY_POINT_COLUMN'}  # the column naming the supply point`);
    }
    files.push('    fields:');
    const used = new Set<string>();
    for (const [target, spec] of Object.entries(TARGETS[kind])) {
      const column = target === 'external_account_number' ? key : match(target, header, used);
      const note = spec.required ? '  # required' : '';
      if (column) { used.add(column); files.push(`      ${target}: ${stringify(column).trim()}${note}`); } else files.push(`      # ${target}:${note}`);
    }
  }
  out.push(`key: ${stringify(key ?? 'ACCOUNT_NUMBER').trim()}`, 'files:', ...files, '');
  return out.join('\n');
}
