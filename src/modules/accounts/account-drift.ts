import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { AccountData } from '../account-data/index.ts';
import { withNormalisedPostcodes } from '../account-data/index.ts';
import { accountTreeRows } from '../account-imports/index.ts';
import { findAccountWithTeam, findStoredTree, findSupplyAddresses } from './account-read.repository.ts';

// Drift: what a record sends for an account that is already imported, compared field by field with
// what the service stored, so a difference is reported rather than waved through. The sent data is
// first put in its stored form (normalised postcodes, absent as null: the rows the create would
// write), so only real differences show. Compared: every field the service keeps of the account
// below its identity: the billing address, unknown_occupier, metadata; each customer whole (names,
// email, phone numbers, alternative numbers, date of birth, preferences); each supply address; each
// supply point whole (its kind, identifier, dates and its kind's own fields), its agreements, its
// meters with their registers, and its transfer readings. Lists are compared by position, with their
// lengths; free-form values (metadata, a meter's type) leaf by leaf. Notes, statements and
// transactions are history, matched item by item by their imports (a differing one is a conflict).

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

  fields<K extends string>(prefix: string, stored: Record<K, unknown>, sent: Record<K, unknown>, keys: readonly K[]): void {
    for (const key of keys) this.json(`${prefix}${key}`, stored[key], sent[key]);
  }

  /** A value compared leaf by leaf: objects key by key (absent as null), lists item by item with their lengths. */
  json(attr: string, stored: unknown, sent: unknown): void {
    if (this.full) return;
    if (Array.isArray(stored) && Array.isArray(sent)) {
      this.compare(`${attr}.length`, stored.length, sent.length);
      for (let i = 0; i < Math.min(stored.length, sent.length); i++) this.json(`${attr}.${i}`, stored[i], sent[i]);
    } else if (isObject(stored) && isObject(sent)) {
      for (const key of new Set([...Object.keys(sent), ...Object.keys(stored)])) this.json(`${attr}.${key}`, stored[key], sent[key]);
    } else {
      this.compare(attr, leaf(stored), leaf(sent));
    }
  }

  /** A list compared by position: its length, then each item both sides have (`at` its path, `k` its position). */
  list<S, T>(attr: string, stored: readonly S[], sent: readonly T[], item: (at: string, stored: S, sent: T, k: number) => void): void {
    this.compare(`${attr}.length`, stored.length, sent.length);
    sent.forEach((one, k) => { if (k < stored.length) item(`${attr}.${k}`, stored[k]!, one, k); });
  }

  /** A numeric column (kept as decimal text) against the number sent. */
  decimal(attr: string, stored: string | number | null, sent: string | number | null): void {
    this.compare(attr, stored === null ? null : Number(stored), sent === null ? null : Number(sent));
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const leaf = (value: unknown): DriftValue => (value === undefined || value === null ? null
  : typeof value === 'object' ? JSON.stringify(value) : value as DriftValue);

const CUSTOMER_FIELDS = ['given_name', 'family_name', 'email', 'mobile', 'landline', 'alternative_phone_numbers', 'date_of_birth'] as const;
const PREFERENCES = ['opted_into_updates', 'opted_into_offers', 'opted_into_sms'] as const;
const ADDRESS_FIELDS = ['supply_address1', 'supply_address2', 'supply_address3', 'supply_address4', 'supply_postcode', 'customer_at_supply_address_from_date'] as const;
const POINT_FIELDS = ['supply_type', 'identifier', 'supply_start_date', 'last_billed_to_date'] as const;
const AGREEMENT_FIELDS = ['tariff_code', 'effective_from'] as const;
const METER_FIELDS = ['serial_number', 'subgroup', 'seal_date', 'meter_number', 'status', 'active_from', 'meter_type'] as const;
const REGISTER_FIELDS = ['register_type', 'whole_digits', 'decimal_digits', 'active_from'] as const;
const READING_FIELDS = ['register_type', 'read_date'] as const;

/**
 * The differences (at most MAX_DRIFT) between `data` and the account of the same external number
 * stored for `supplierId`; none when there is no such account.
 */
export async function findAccountDrift(db: Kysely<Database>, supplierId: number, data: AccountData): Promise<Drift[]> {
  const sent = withNormalisedPostcodes(data);
  const account = await findAccountWithTeam(db, supplierId, sent.external_account_number);
  if (!account) return [];
  const addresses = await findSupplyAddresses(db, account.id);
  const stored = await findStoredTree(db, account.id);
  const rows = accountTreeRows(sent);
  const drift = new DriftList(sent.external_account_number);
  const billing = sent.billing_address;
  drift.compare('billing_address.street_address', account.billing_street_address, billing.street_address);
  drift.compare('billing_address.locality', account.billing_locality, billing.locality ?? null);
  drift.compare('billing_address.administrative_area', account.billing_administrative_area, billing.administrative_area ?? null);
  drift.compare('billing_address.country', account.billing_country, billing.country);
  drift.compare('billing_address.postal_code', account.billing_postal_code, billing.postal_code);
  drift.compare('unknown_occupier', account.unknown_occupier, sent.unknown_occupier ?? null);
  drift.json('metadata', stored.metadata, sent.metadata ?? []);

  drift.list('customers', stored.customers, rows.customers, (at, was, customer) => {
    drift.fields(`${at}.`, was, customer, CUSTOMER_FIELDS);
    drift.fields(`${at}.customer_preferences.`, was, customer, PREFERENCES);
  });
  drift.list('supply_addresses', addresses, rows.addresses, (at, was, address, i) => {
    drift.fields(`${at}.`, was, address, ADDRESS_FIELDS);
    const storedPoints = stored.points.filter((p) => p.supply_address_id === was.id);
    drift.list(`${at}.supply_points`, storedPoints, rows.points.filter((p) => p.address === i), (pointAt, storedPoint, point) => {
      drift.fields(`${pointAt}.`, storedPoint, point, POINT_FIELDS);
      // The kind's own fields, kept together: key by key, under the point's own path.
      drift.json(pointAt, storedPoint.details, point.details);
      pointChildren(drift, pointAt, stored, storedPoint.id, rows, point);
    });
  });
  return drift.found;
}

type StoredTree = Awaited<ReturnType<typeof findStoredTree>>;
type SentTree = ReturnType<typeof accountTreeRows>;
const ofPoint = <R extends { address: number; point: number }>(list: R[], { address, point }: { address: number; point: number }) =>
  list.filter((r) => r.address === address && r.point === point);

/** A supply point's agreements, meters (each with its registers) and transfer readings, by position. */
function pointChildren(drift: DriftList, at: string, stored: StoredTree, pointId: number, rows: SentTree, point: { address: number; point: number }): void {
  drift.list(`${at}.agreements`, stored.agreements.filter((a) => a.supply_point_id === pointId), ofPoint(rows.agreements, point),
    (itemAt, was, agreement) => drift.fields(`${itemAt}.`, was, agreement, AGREEMENT_FIELDS));
  drift.list(`${at}.meters`, stored.meters.filter((m) => m.supply_point_id === pointId), ofPoint(rows.meters, point), (meterAt, meter, sent, k) => {
    drift.fields(`${meterAt}.`, meter, sent, METER_FIELDS);
    drift.list(`${meterAt}.registers`, stored.registers.filter((r) => r.meter_id === meter.id), ofPoint(rows.registers, point).filter((r) => r.meter === k),
      (registerAt, register, r) => {
        drift.fields(`${registerAt}.`, register, r, REGISTER_FIELDS);
        drift.decimal(`${registerAt}.multiplier`, register.multiplier, r.multiplier ?? null);
      });
  });
  drift.list(`${at}.transfer_readings`, stored.readings.filter((r) => r.supply_point_id === pointId), ofPoint(rows.readings, point),
    (readingAt, reading, r) => {
      drift.fields(`${readingAt}.`, reading, r, READING_FIELDS);
      drift.decimal(`${readingAt}.value`, reading.value, r.value);
    });
}
