import { randomBytes } from 'node:crypto';

// Valid bodies for every write endpoint (spec 2.3–2.7), for the fault tests. Each call makes unique
// numbers and electricity identifiers, so bodies never collide across tests or instances.
type Body = Record<string, any>;

const id = () => randomBytes(5).toString('hex').toUpperCase();

/** An account with every supply-point kind; `points` electricity points with meters add weight. */
export function accountPayload(supplier: string, ext = `EXT-${id()}`, options: { electricity?: number; email?: boolean } = {}): Body {
  const tag = id();
  const register = (type: string) => ({ register_type: type, whole_digits: 6, decimal_digits: 1, active_from: '2019-04-01', multiplier: 1 });
  const meter = (serial: string) => ({
    serial_number: serial, subgroup: 1, seal_date: '2019-03-15', meter_number: 1, status: 'ACTIVE', active_from: '2019-04-01',
    meter_type: { manufacturer: 'Landis+Gyr', model: 'E470', amps_low: 5, amps_high: 100, phase: 'SINGLE', is_bidirectional: false, cover_material: 'GLASS', base: 'SOCKET' },
    registers: [register('KWH_IMPORT'), register('KW_IMPORT')],
  });
  const common = { supply_start_date: '2019-04-01', last_billed_to_date: '2024-03-31', agreements: [{ tariff_code: 'E-1R-STD', effective_from: '2024-01-01' }] };
  const electricity = (n: number) => ({
    ...common, supply_type: 'ELECTRICITY', identifier: `E${tag}${n}`, initial_connection_date: '2001-06-12', location_description: 'Hall',
    book_number: 'BK-1', call_number: 17, energization_status: 'ENERGIZED', meters: [meter(`M${tag}${n}a`), meter(`M${tag}${n}b`)],
    transfer_readings: [{ register_type: 'KWH_IMPORT', read_date: '2024-03-31', value: '10432.5' }],
  });
  const customer = (given: string) => ({
    given_name: given, family_name: 'Tester', ...(options.email === false ? {} : { email: `${given.toLowerCase()}.${tag.toLowerCase()}@example.com` }),
    mobile: '+447911123456', landline: '', alternative_phone_numbers: [{ phone_number: '+442079460958' }], date_of_birth: '1980-05-17',
    customer_preferences: { opted_into_updates: true, opted_into_offers: false, opted_into_sms: true }, user_details: [],
  });
  return {
    external_account_number: ext,
    import_supplier: supplier,
    billing_address: { street_address: '12 Acacia Avenue\nFlat 3', locality: 'London', administrative_area: 'Greater London', country: 'GB', postal_code: 'SW1A 1AA' },
    metadata: [{ key: 'legacy_system', value: { name: 'OldCo', version: 7 } }],
    customers: [customer('Ada'), customer('Charles')],
    supply_addresses: [
      {
        supply_address1: '12 Acacia Avenue', supply_postcode: 'SW1A 1AA', customer_at_supply_address_from_date: '2019-04-01',
        supply_points: [
          ...Array.from({ length: options.electricity ?? 1 }, (_, n) => electricity(n)),
          { ...common, supply_type: 'HEAT_PUMP', serial_number_internal: `HPI-${tag}`, make_model: 'Daikin', size: 8 },
          { ...common, supply_type: 'WATER_HEATER', serial_number: `WH-${tag}`, tank_size: 'BIG', tank_type: 'GREEN', tank_configuration: 'VERTICAL' },
        ],
      },
      {
        supply_address1: 'Unit 4 Riverside', supply_postcode: 'E14 5AB',
        supply_points: [
          { ...common, supply_type: 'LIGHT', serial_number: `LT-${tag}`, secondary_serial_number: null, installed_at: '2018-09-01' },
          { ...common, supply_type: 'POLE', serial_number: `PL-${tag}`, manufacturer_name: 'Valmont', installed_at: '2015-02-20' },
        ],
      },
    ],
    ledgers: [],
    statements: [],
    notes: [{ body: 'Prefers email.', created_at: '2024-01-05T10:00:00Z', document_paths: [{ document_path: 'letters/welcome.pdf' }] }],
    unknown_occupier: false,
  };
}

export const processBody = (supplier: string, ext: string, team: string, dryRun?: boolean): Body =>
  ({ external_account_number: ext, import_supplier_code: supplier, operations_team_name: team, ...(dryRun === undefined ? {} : { dry_run: dryRun }) });

export const notesBody = (supplier: string, ext: string, notes: Body[] = [{ body: `Note ${id()}`, document_paths: [{ document_path: 'letters/a.pdf' }] }]): Body =>
  ({ import_supplier: supplier, external_account_number: ext, notes });

export const transaction = (transactionId = `T-${id()}`, extra: Body = {}): Body =>
  ({ transaction_id: transactionId, transaction_date: '2024-03-01', amount: 12.3, type: 'CHARGE', reason: 'IMPORTED_CHARGE', ...extra });

export const supplyCharge = (transactionId = `SC-${id()}`): Body => ({
  transaction_id: transactionId, transaction_date: '2024-03-05', amount: 99.99, type: 'SUPPLY_CHARGE', product_code: 'ELEC-STD',
  line_items: [{ rate_band: 'CONSUMPTION_STANDARD', start_date: '2024-02-01', end_date: '2024-02-29', number_of_units: 100.5, net_amount: 95.23, price_per_unit: 0.2845, units: [50, 50.5] }],
  tax_items: [{ amount: 4.76, tax_type: 'VAT', value_taxed: 95.23, rate: 0.05, unit_type: 'PROPORTION' }],
});

export const transactionsBody = (supplier: string, ext: string, transactions: Body[] = [transaction()]): Body =>
  ({ import_supplier: supplier, external_account_number: ext, transactions });

/**
 * Statement `n` covers month n of 1950 onwards, so any number of them never overlap, and the most a
 * request may hold (500, and one more) all ended long ago: a statement may not end in the future.
 */
export const statement = (n = 0, statementId = `S-${id()}`): Body => {
  const from = new Date(Date.UTC(1950, n, 1));
  const to = new Date(Date.UTC(1950, n + 1, 0));
  const day = (d: Date) => d.toISOString().slice(0, 10);
  return { bill_period_from_date: day(from), bill_period_to_date: day(to), statement_id: statementId, issued_date: day(to), number: `N${n}`, gross_amount: 10.5, statement_path: `statements/${n}.pdf` };
};

export const statementsBody = (supplier: string, ext: string, statements: Body[] = [statement()]): Body =>
  ({ import_supplier: supplier, external_account_number: ext, statements });

export const paymentInstructionBody = (supplier: string, ext: string, vendor = 'no-such-vendor'): Body =>
  ({ import_supplier: supplier, external_account_number: ext, vendor, reference: `PI-${id()}`, type: 'CARD' });

export const ROUTES = {
  validate: '/v1/data-import/validate-account/',
  stage: '/v1/data-import/account-import-process/create-or-update/',
  process: '/v1/data-import/account-import-process/process/',
  notes: '/v1/data-import/notes/create/',
  transactions: '/v1/data-import/transactions/create/',
  statements: '/v1/data-import/historical-statements/create/',
  paymentInstruction: '/v1/data-import/payment-instruction/create/',
  status: (s: string, e: string) => `/v1/data-import/account-transfer-status/${encodeURIComponent(s)}/${encodeURIComponent(e)}/`,
  all: (s: string) => `/v1/data-import/all-account-import-processes/${encodeURIComponent(s)}/`,
  pending: (s: string) => `/v1/data-import/pending-account-import-processes/${encodeURIComponent(s)}/`,
  imported: (s: string) => `/v1/data-import/imported-account-import-processes/${encodeURIComponent(s)}/`,
  account: (s: string, e: string) => `/v1/data-import/accounts/${encodeURIComponent(s)}/${encodeURIComponent(e)}/`,
} as const;
