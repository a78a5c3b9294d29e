import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../schemas/text.ts';

// The account read endpoint (an addition under spec 9.2): what an import created, for the supplier
// to check. Optional values are null here rather than left out, so every account has one shape.

const NullableString = Nullable(Type.String());
const Document = Type.Object({
  document_path: Type.String({ description: 'As imported, relative to the supplier\'s documents root' }),
  location: Type.String({ description: 'Bucket, then the supplier\'s documents root, then the path' }),
});

const SupplyPoint = Type.Object({
  supply_type: Type.String(),
  identifier: NullableString,
  supply_start_date: Type.String({ format: 'date' }),
  last_billed_to_date: NullableString,
  agreements_count: Type.Integer(),
  meters_count: Type.Integer(),
  registers_count: Type.Integer(),
});

export const AccountView = Type.Object({
  service_account_number: Type.String(),
  external_account_number: Type.String(),
  import_supplier: Type.String(),
  operations_team: Type.String(),
  created_at: Type.String({ description: 'UTC, YYYY-MM-DDTHH:MM:SSZ' }),
  billing_address: Type.Object({
    street_address: Type.String(), locality: NullableString, administrative_area: NullableString,
    country: Type.String(), postal_code: Type.String(),
  }),
  unknown_occupier: Nullable(Type.Boolean()),
  customers: Type.Array(Type.Object({
    given_name: Type.String(), family_name: Type.String(), email: NullableString, mobile: NullableString, landline: NullableString,
  })),
  supply_addresses: Type.Array(Type.Object({
    supply_address1: Type.String(), supply_address2: NullableString, supply_address3: NullableString, supply_address4: NullableString,
    supply_postcode: Type.String(), customer_at_supply_address_from_date: NullableString,
    supply_points: Type.Array(SupplyPoint),
  })),
  balance: Type.String({
    description: 'Decimal string with two decimals, summed by the database from the transactions. Positive means the '
      + 'account is in credit: CREDIT and PAYMENT add to it; CHARGE, SUPPLY_CHARGE and REPAYMENT take from it.',
  }),
  transactions_count: Type.Integer(),
  open_statement_period_from: Nullable(Type.String({ description: 'First day of the open statement period; null when open from the start' })),
  notes_count: Type.Integer(),
  pinned_notes: Type.Array(Type.Object({
    created_at: Type.String(), body: NullableString, unpin_at: NullableString, documents: Type.Array(Document),
  }), { description: 'Notes pinned now (not yet past unpin_at), newest first, at most 100' }),
  statements: Type.Array(Type.Object({
    statement_id: Type.String(), bill_period_from_date: Type.String(), bill_period_to_date: Type.String(), issued_date: Type.String(),
    number: Type.String(), gross_amount: Type.String({ description: 'Two decimals' }), document: Nullable(Document),
  })),
  payment_instruction: Nullable(Type.Object({
    vendor: Type.String(), reference: Type.String(), type: Type.String(), status: NullableString,
    details: Type.Object({}, { additionalProperties: true, description: 'The vendor\'s non-sensitive details' }),
    created_at: Type.String(),
  })),
}, { $id: 'Account', description: 'An imported account as the service holds it; optional values are null rather than left out.' });
export type AccountView = Static<typeof AccountView>;
