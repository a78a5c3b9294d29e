// The record fields a mapping can fill, per input file: where each lands in the migration record,
// the JSON type its text becomes, and whether a row without it is rejected. The shapes are the
// service's own (the account data and the history endpoints' items); the pre-flight checks the rest.

export const FILE_KINDS = ['accounts', 'customers', 'supply_points', 'meters', 'agreements', 'transactions', 'statements', 'notes'] as const;
export type FileKind = (typeof FILE_KINDS)[number];
export type ChildKind = Exclude<FileKind, 'accounts'>;

/** text: as it is; integer/number/money: a JSON number; boolean: yes/no words; date: YYYY-MM-DD; datetime: UTC with Z. */
export type TargetType = 'text' | 'integer' | 'number' | 'money' | 'boolean' | 'date' | 'datetime';

export interface Target { type: TargetType; required?: true }

const text: Target = { type: 'text' };
const requiredText: Target = { type: 'text', required: true };
const date: Target = { type: 'date' };
const requiredDate: Target = { type: 'date', required: true };
const bool: Target = { type: 'boolean' };
const int: Target = { type: 'integer' };

// A name with `[]` (registers[].register_type) takes a list (the `split` transform): one item a value.
export const TARGETS: Record<FileKind, Record<string, Target>> = {
  accounts: {
    external_account_number: requiredText,
    import_supplier: requiredText,
    'billing_address.street_address': requiredText,
    'billing_address.locality': text,
    'billing_address.administrative_area': text,
    'billing_address.country': requiredText,
    'billing_address.postal_code': requiredText,
    unknown_occupier: bool,
    // The record's payment instruction, one per account, sent only when a value is given.
    'payment_instruction.vendor': text,
    'payment_instruction.reference': text,
    'payment_instruction.type': text,
  },
  customers: {
    given_name: requiredText,
    family_name: requiredText,
    email: text,
    mobile: text,
    landline: text,
    'alternative_phone_numbers[].phone_number': text,
    date_of_birth: date,
    'customer_preferences.opted_into_updates': bool,
    'customer_preferences.opted_into_offers': bool,
    'customer_preferences.opted_into_sms': bool,
  },
  // One row a supply point; rows with the same address fields share one supply address.
  supply_points: {
    supply_address1: requiredText,
    supply_address2: text,
    supply_address3: text,
    supply_address4: text,
    supply_postcode: requiredText,
    customer_at_supply_address_from_date: date,
    supply_type: requiredText,
    supply_start_date: requiredDate,
    last_billed_to_date: date,
    identifier: text,
    initial_connection_date: date,
    location_description: text,
    book_number: text,
    call_number: int,
    energization_status: text,
    serial_number: text,
    secondary_serial_number: text,
    serial_number_internal: text,
    serial_number_external: text,
    make_model: text,
    size: int,
    manufacturer_name: text,
    model_name: text,
    location: text,
    product_note: text,
    installed_at: date,
    tank_size: text,
    tank_type: text,
    tank_configuration: text,
  },
  meters: {
    serial_number: requiredText,
    subgroup: int,
    seal_date: date,
    meter_number: int,
    status: text,
    active_from: date,
    'meter_type.manufacturer': text,
    'meter_type.model': text,
    'registers[].register_type': text,
  },
  agreements: {
    tariff_code: requiredText,
    effective_from: requiredDate,
  },
  transactions: {
    transaction_id: requiredText,
    transaction_date: requiredDate,
    amount: { type: 'money', required: true },
    type: requiredText,
    reason: text,
    display_note: text,
    note: text,
    reference: text,
    payment_type: text,
    product_code: text,
  },
  statements: {
    statement_id: requiredText,
    bill_period_from_date: requiredDate,
    bill_period_to_date: requiredDate,
    issued_date: requiredDate,
    number: requiredText,
    gross_amount: { type: 'money', required: true },
    statement_path: text,
  },
  notes: {
    body: text,
    created_at: { type: 'datetime' },
    is_pinned: bool,
    'document_paths[].document_path': text,
  },
};

/** Child files whose rows belong to one supply point of the account (named by the `link` column). */
export const POINT_CHILDREN: readonly ChildKind[] = ['meters', 'agreements'];

/** The supply-address part of a supply point row: rows equal on these share an address. */
export const ADDRESS_FIELDS = ['supply_address1', 'supply_address2', 'supply_address3', 'supply_address4', 'supply_postcode', 'customer_at_supply_address_from_date'];
