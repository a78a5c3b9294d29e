import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { AccountData } from '../account-data/index.ts';
import { withNormalisedPostcodes } from '../account-data/index.ts';
import { accountTreeRows } from '../account-imports/index.ts';
import { findAccountWithTeam, findCustomers, findSupplyAddresses, findSupplyPoints } from './account-read.repository.ts';

// Drift: what a record sends for an account that is already imported, compared field by field with
// what the service stored, so a difference is reported rather than waved through. The sent data is
// first put in its stored form (normalised postcodes, absent as null: the rows the create would
// write), so only real differences show. Compared: the billing address, unknown_occupier, each
// customer's names, email and phone numbers, each supply address, and each supply point's kind,
// identifier and dates; customers, addresses and points by position, and their numbers.

export type DriftValue = string | number | boolean | null;
export interface Drift { code: 'account_differs'; attr: string; detail: string; stored: DriftValue; sent: DriftValue }

/** Warnings a record carries at most: enough to see what drifted, bounded for a book of large accounts. */
export const MAX_DRIFT = 20;

const shown = (value: DriftValue): string => (value === null ? 'nothing' : JSON.stringify(value));

class DriftList {
  readonly found: Drift[] = [];
  constructor(private readonly ext: string) {}
  get full(): boolean { return this.found.length >= MAX_DRIFT; }

  compare(attr: string, stored: DriftValue, sent: DriftValue): void {
    if (this.full || stored === sent) return;
    this.found.push({
      code: 'account_differs', attr: `account.${attr}`, stored, sent,
      detail: `Account "${this.ext}" is already imported with ${shown(stored)} here; this record sends ${shown(sent)}. The stored account is kept as it is.`,
    });
  }

  fields<K extends string>(prefix: string, stored: Record<K, DriftValue>, sent: Record<K, DriftValue>, keys: readonly K[]): void {
    for (const key of keys) this.compare(`${prefix}${key}`, stored[key], sent[key]);
  }
}

const CUSTOMER_FIELDS = ['given_name', 'family_name', 'email', 'mobile', 'landline'] as const;
const ADDRESS_FIELDS = ['supply_address1', 'supply_address2', 'supply_address3', 'supply_address4', 'supply_postcode', 'customer_at_supply_address_from_date'] as const;
const POINT_FIELDS = ['supply_type', 'identifier', 'supply_start_date', 'last_billed_to_date'] as const;

/**
 * The differences (at most MAX_DRIFT) between `data` and the account of the same external number
 * stored for `supplierId`; none when there is no such account.
 */
export async function findAccountDrift(db: Kysely<Database>, supplierId: number, data: AccountData): Promise<Drift[]> {
  const sent = withNormalisedPostcodes(data);
  const account = await findAccountWithTeam(db, supplierId, sent.external_account_number);
  if (!account) return [];
  const [customers, addresses, points] = [
    await findCustomers(db, account.id), await findSupplyAddresses(db, account.id), await findSupplyPoints(db, account.id),
  ];
  const rows = accountTreeRows(sent);
  const drift = new DriftList(sent.external_account_number);
  const billing = sent.billing_address;
  drift.compare('billing_address.street_address', account.billing_street_address, billing.street_address);
  drift.compare('billing_address.locality', account.billing_locality, billing.locality ?? null);
  drift.compare('billing_address.administrative_area', account.billing_administrative_area, billing.administrative_area ?? null);
  drift.compare('billing_address.country', account.billing_country, billing.country);
  drift.compare('billing_address.postal_code', account.billing_postal_code, billing.postal_code);
  drift.compare('unknown_occupier', account.unknown_occupier, sent.unknown_occupier ?? null);

  drift.compare('customers.length', customers.length, rows.customers.length);
  rows.customers.forEach((customer, i) => {
    const stored = customers[i];
    if (stored) drift.fields(`customers.${i}.`, stored, customer, CUSTOMER_FIELDS);
  });

  drift.compare('supply_addresses.length', addresses.length, rows.addresses.length);
  rows.addresses.forEach((address, i) => {
    const stored = addresses[i];
    if (!stored) return;
    drift.fields(`supply_addresses.${i}.`, stored, address, ADDRESS_FIELDS);
    const storedPoints = points.filter((p) => p.supply_address_id === stored.id);
    const sentPoints = rows.points.filter((p) => p.address === i);
    drift.compare(`supply_addresses.${i}.supply_points.length`, storedPoints.length, sentPoints.length);
    sentPoints.forEach((point) => {
      const storedPoint = storedPoints[point.point];
      if (storedPoint) drift.fields(`supply_addresses.${i}.supply_points.${point.point}.`, storedPoint, point, POINT_FIELDS);
    });
  });
  return drift.found;
}
