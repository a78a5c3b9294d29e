import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';

// A legacy billing system's CSV export, as examples/legacy-export/mapping.yaml reads it: `;`
// separated, dd/mm/yyyy dates, decimal commas, E/G fuel codes and the system's own type codes.
// Deterministic for a seed. `order`: `sorted` writes every file by account number; `by-date` writes
// the transactions month by month (as a ledger table exports them), so they must be sorted on disk;
// `shuffled` writes every file, the accounts file too, in a random order (small exports only).

export interface LegacyExportSpec {
  dir: string;
  accounts: number;
  transactionsPerAccount: number;
  order: 'sorted' | 'by-date' | 'shuffled';
  /** Legacy untidiness that the mapping's transforms must handle (spaces, lower case, quoted commas and line breaks). */
  messy?: boolean;
  seed?: number;
}

export const LEGACY_FILES = {
  accounts: 'ACCOUNT_NO;ADDRESS_1;ADDRESS_2;TOWN;POSTCODE;COUNTRY;OCCUPIER_UNKNOWN',
  customers: 'ACCOUNT_NO;FORENAME;SURNAME;EMAIL;MOBILE;HOME_PHONE;DOB;MARKETING_OK',
  supply_points: 'ACCOUNT_NO;MPAN;SUPPLY_TYPE;SITE_ADDRESS;SITE_POSTCODE;SUPPLY_START;LAST_BILLED',
  meters: 'ACCOUNT_NO;MPAN;METER_SERIAL;METER_STATUS;REGISTERS',
  agreements: 'ACCOUNT_NO;MPAN;TARIFF;TARIFF_FROM',
  transactions: 'ACCOUNT_NO;TXN_ID;TXN_DATE;TXN_TYPE;REASON;AMOUNT;FUEL;DESCRIPTION',
  statements: 'ACCOUNT_NO;STATEMENT_ID;PERIOD_FROM;PERIOD_TO;ISSUED;STATEMENT_NO;TOTAL',
  notes: 'ACCOUNT_NO;NOTE_DATE;NOTE_TEXT;PINNED',
} as const;
export type LegacyFile = keyof typeof LEGACY_FILES;

const POSTCODES = ['BS1 5TY', 'LS1 4AP', 'M1 1AE', 'YO1 7HH', 'EH1 1YZ', 'CF10 1EP', 'SW1A 2AA', 'B1 1BB', 'NE1 4ST', 'G2 1DY'];
const TOWNS = ['Bristol', 'Leeds', 'Manchester', 'York', 'Edinburgh', 'Cardiff', 'London', 'Birmingham', 'Newcastle', 'Glasgow'];
const FORENAMES = ['Alice', 'Bob', 'Chidi', 'Dorota', 'Eilidh', 'Farid', 'Gwen', 'Hamish', 'Ines', 'Jamal'];
const SURNAMES = ['Jones', 'Smith', "O'Brien", 'Nowak', 'MacLeod', 'Patel', 'Evans', 'Murray', 'Silva', 'Okafor'];

/** mulberry32: a small deterministic generator, so an export can be made again exactly. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const legacyAccountNumber = (i: number) => `LEG${String(i).padStart(7, '0')}`;
const pad = (n: number) => String(n).padStart(2, '0');
/** Month `m` (0 = January 2024) as dd/mm/yyyy of day `d`. */
const ukDate = (m: number, d: number) => `${pad(d)}/${pad((m % 12) + 1)}/${2024 + Math.floor(m / 12)}`;
/** Pence as a legacy amount: thousands grouped with dots, a decimal comma. */
const money = (pence: number) => `${Math.floor(pence / 100).toLocaleString('de-DE')},${pad(pence % 100)}`;
const quoted = (s: string) => `"${s.replaceAll('"', '""')}"`;

/** The rows of one account in each file (without the transactions of `by-date`). */
function accountRows(i: number, spec: LegacyExportSpec, next: () => number): Record<LegacyFile, string[]> {
  const n = legacyAccountNumber(i);
  const messy = spec.messy === true;
  const at = i % POSTCODES.length;
  const postcode = messy && i % 7 === 0 ? POSTCODES[at]!.toLowerCase() : POSTCODES[at]!;
  const street = `${1 + (i % 180)} ${['High Street', 'Station Road', 'Church Lane', 'Mill Road'][i % 4]}`;
  const mpan = `${1000000000000 + i * 7}`;
  const rows: Record<LegacyFile, string[]> = {
    accounts: [[n, messy && i % 5 === 0 ? ` ${street} ` : street, i % 3 === 0 ? 'Flat 1' : '', TOWNS[at], postcode, messy && i % 11 === 0 ? 'gb' : 'GB', i % 17 === 0 ? 'Y' : 'N'].join(';')],
    customers: [],
    supply_points: [[n, mpan, 'E', street, postcode, ukDate(0, 1 + (i % 28)), ''].join(';')],
    meters: [[n, mpan, `S${String(i).padStart(8, '0')}A`, 'A', i % 4 === 0 ? 'KWH_IMPORT|KWH_EXPORT' : 'KWH_IMPORT'].join(';')],
    agreements: [[n, mpan, i % 2 === 0 ? 'FIX-24M' : 'VAR-STD', ukDate(0, 1 + (i % 28))].join(';')],
    transactions: [],
    statements: [],
    notes: [],
  };
  const customers = 1 + (i % 2);
  for (let c = 0; c < customers; c++) {
    const given = FORENAMES[(i + c) % FORENAMES.length]!;
    const family = SURNAMES[i % SURNAMES.length]!;
    rows.customers.push([n, messy && c === 0 && i % 6 === 0 ? `${given}  ` : given, family,
      c === 0 ? `${given.toLowerCase()}.${i}@example.com` : '', c === 0 ? `+447911${String(100000 + (i % 900000))}` : '',
      c === 0 ? '' : '0117 496 0123', `${pad(1 + (i % 28))}/${pad(1 + (i % 12))}/${1950 + (i % 50)}`, i % 3 === 0 ? 'Y' : 'N'].join(';'));
  }
  rows.statements.push([n, `ST-${i}-1`, ukDate(0, 1), ukDate(0, 28), ukDate(1, 3), `INV${i}`, money(5000 + Math.floor(next() * 20000))].join(';'));
  if (spec.order !== 'by-date') for (let t = 0; t < spec.transactionsPerAccount; t++) rows.transactions.push(transactionRow(i, t, next));
  if (i % 4 === 0) {
    const text = messy && i % 8 === 0 ? quoted(`Called about the bill; said "it's too high",\nasked for a meter check`) : quoted('Moved in; meter read taken');
    rows.notes.push([n, `${ukDate(0, 1 + (i % 28))} 09:${pad(i % 60)}`, text, i % 16 === 0 ? 'Y' : 'N'].join(';'));
  }
  return rows;
}

/** Transaction `t` of account `i`: supply charges (with the fuel) and payments, alternately, one a month. */
function transactionRow(i: number, t: number, next: () => number): string {
  const charge = t % 2 === 0;
  const pence = 1000 + Math.floor(next() * (charge ? 15000 : 14000));
  return [legacyAccountNumber(i), `T${i}-${t}`, ukDate(2 + Math.floor(t / 2), 1 + (i % 28)), charge ? 'SC' : 'PAY', charge ? '' : 'DD',
    money(pence), charge ? (i % 3 === 0 ? 'G' : 'E') : '', charge ? 'Energy charge' : 'Direct debit'].join(';');
}

class Out {
  private buffer = '';
  constructor(private readonly stream: WriteStream) {}
  async line(text: string): Promise<void> {
    this.buffer += `${text}\n`;
    if (this.buffer.length > 1 << 20) await this.flush();
  }
  async flush(): Promise<void> {
    if (this.buffer && !this.stream.write(this.buffer)) await once(this.stream, 'drain');
    this.buffer = '';
  }
  async close(): Promise<void> {
    await this.flush();
    this.stream.end();
    await once(this.stream, 'finish');
  }
}

export async function writeLegacyExport(spec: LegacyExportSpec): Promise<void> {
  const next = random(spec.seed ?? 28);
  const outs = Object.fromEntries(Object.entries(LEGACY_FILES).map(([file, header]) => {
    const out = new Out(createWriteStream(join(spec.dir, `${file}.csv`)));
    void out.line(header);
    return [file, out];
  })) as Record<LegacyFile, Out>;
  if (spec.order === 'shuffled') {
    // Accounts in a random order, an account's rows still in their order (as a date-ordered export keeps them).
    const all: Record<string, { i: number; row: string }[]> = {};
    for (let i = 1; i <= spec.accounts; i++) {
      for (const [file, rows] of Object.entries(accountRows(i, spec, next))) (all[file] ??= []).push(...rows.map((row) => ({ i, row })));
    }
    for (const [file, rows] of Object.entries(all)) {
      const queues = new Map<number, string[]>();
      for (const { i, row } of rows) queues.set(i, [...(queues.get(i) ?? []), row]);
      for (let k = rows.length - 1; k > 0; k--) { const j = Math.floor(next() * (k + 1)); [rows[k], rows[j]] = [rows[j]!, rows[k]!]; }
      for (const { i } of rows) await outs[file as LegacyFile].line(queues.get(i)!.shift()!);
    }
  } else {
    for (let i = 1; i <= spec.accounts; i++) {
      for (const [file, rows] of Object.entries(accountRows(i, spec, next))) for (const row of rows) await outs[file as LegacyFile].line(row);
    }
    if (spec.order === 'by-date') {
      for (let t = 0; t < spec.transactionsPerAccount; t++) for (let i = 1; i <= spec.accounts; i++) await outs.transactions.line(transactionRow(i, t, next));
    }
  }
  await Promise.all(Object.values(outs).map((out) => out.close()));
}

/** The broken rows planted in examples/legacy-export (appended to their files), each with the reject it must give. */
export const PLANTED_ROWS: { file: LegacyFile; row: string; key: string; column: string; reason: string }[] = [
  { file: 'accounts', row: 'LEG0000901;5 Mill Road;;York;;GB;N', key: 'LEG0000901', column: 'POSTCODE', reason: 'required' },
  { file: 'customers', row: 'LEG0000901;Zoe;Black;;;;01/01/1980;N', key: 'LEG0000901', column: '', reason: 'account_rejected' },
  { file: 'accounts', row: 'LEG0000042;42 Duplicate Road;;Leeds;LS1 4AP;GB;N', key: 'LEG0000042', column: 'ACCOUNT_NO', reason: 'duplicate_key' },
  { file: 'customers', row: 'LEG0000010;Extra;Person;;;;31/02/1975;N', key: 'LEG0000010', column: 'DOB', reason: 'invalid_date' },
  { file: 'customers', row: 'LEG0000011;Too;Many;;;;01/01/1980;N;extra', key: '', column: '', reason: 'malformed_row' },
  { file: 'transactions', row: 'LEG0000012;T12-X;05/03/2024;PAY;DD;12,34,5;;Direct debit', key: 'LEG0000012', column: 'AMOUNT', reason: 'invalid_number' },
  { file: 'transactions', row: 'LEG0000013;T13-X;05/03/2024;SC;;10,00;X;Energy charge', key: 'LEG0000013', column: 'FUEL', reason: 'unmapped_code' },
  { file: 'transactions', row: 'LEG0099999;T99-1;05/03/2024;PAY;DD;10,00;;Direct debit', key: 'LEG0099999', column: 'ACCOUNT_NO', reason: 'orphan' },
  { file: 'meters', row: 'LEG0000014;9999999999999;S99999999A;A;KWH_IMPORT', key: 'LEG0000014', column: 'MPAN', reason: 'orphan' },
  { file: 'statements', row: 'LEG0000015;ST-15-X;01/13/2024;28/01/2024;03/02/2024;INV15X;10,00', key: 'LEG0000015', column: 'PERIOD_FROM', reason: 'invalid_date' },
  { file: 'notes', row: 'LEG0000016;01/02/2024 10:00;Asked about tariffs;maybe', key: 'LEG0000016', column: 'PINNED', reason: 'invalid_boolean' },
];
