import { NO_FINDINGS, type RuleCheck, type RuleFinding } from '../../core/rules.ts';
import { dayNumber } from '../../core/dates.ts';
import { BOUNDS, isCountryCode, isRealDate, phoneNumberProblem } from './field-checks.ts';
import { postcodeProblem } from './postcodes.ts';

// Cross-field rules of the account data (D5). They run on whatever was sent, even when the schema
// already failed it, so every access is guarded: a value of the wrong shape is skipped here (the
// schema reports it) rather than reported twice or thrown on.
// They run on every account validated: plain loops, no closure made per value, and a field's path
// is written only for its error.

const objectOf = (value: unknown): Record<string, unknown> | undefined =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
const NO_ITEMS: readonly unknown[] = Object.freeze([]);
const arrayOf = (value: unknown): readonly unknown[] => (Array.isArray(value) ? value : NO_ITEMS);

/** The detail of a landline or alternative number that is not a phone number at all. */
const PHONE_DETAIL = 'Enter a valid phone number: international with a leading +, or national in the billing address\'s country.';

/** Why a landline or alternative number is refused, or null (see checkPhones). */
function phoneProblem(value: unknown, country: string | undefined, emptyAllowed: boolean): string | null {
  if (typeof value !== 'string' || value.length > BOUNDS.phone) return null;
  if (value === '' && emptyAllowed) return null;
  // A national number cannot be read without a valid billing country; that country already has
  // its own error, and the number may be right once it is fixed.
  if (!value.startsWith('+') && value !== '' && !country) return null;
  return phoneNumberProblem(value, country, PHONE_DETAIL);
}

/** Landline and alternative numbers without `+` are read in the billing country (when it is usable). */
function checkPhones(account: Record<string, unknown>, found: RuleFinding[]): void {
  const billingCountry = objectOf(account.billing_address)?.country;
  const country = typeof billingCountry === 'string' && isCountryCode(billingCountry) ? billingCountry : undefined;
  const customers = arrayOf(account.customers);
  for (let i = 0; i < customers.length; i += 1) {
    const customer = objectOf(customers[i]);
    if (!customer) continue;
    const landline = phoneProblem(customer.landline, country, true);
    if (landline) found.push({ path: `customers.${i}.landline`, code: 'invalid_phone_number', detail: landline });
    const alternatives = arrayOf(customer.alternative_phone_numbers);
    for (let j = 0; j < alternatives.length; j += 1) {
      const detail = phoneProblem(objectOf(alternatives[j])?.phone_number, country, false);
      if (detail) found.push({ path: `customers.${i}.alternative_phone_numbers.${j}.phone_number`, code: 'invalid_phone_number', detail });
    }
  }
}

/** last_billed_to_date ≥ supply_start_date; electricity identifiers unique within the payload. */
function checkSupplyPoints(account: Record<string, unknown>, found: RuleFinding[]): void {
  let identifiers: Set<string> | undefined;
  const addresses = arrayOf(account.supply_addresses);
  for (let i = 0; i < addresses.length; i += 1) {
    const points = arrayOf(objectOf(addresses[i])?.supply_points);
    for (let j = 0; j < points.length; j += 1) {
      const point = objectOf(points[j]);
      if (!point) continue;
      const start = point.supply_start_date;
      const end = point.last_billed_to_date;
      if (isRealDate(start) && isRealDate(end) && dayNumber(end) < dayNumber(start)) {
        found.push({
          path: `supply_addresses.${i}.supply_points.${j}.last_billed_to_date`, code: 'invalid_date_range',
          detail: 'last_billed_to_date must not be before supply_start_date.',
        });
      }
      const identifier = point.identifier;
      if (point.supply_type === 'ELECTRICITY' && typeof identifier === 'string' && identifier !== '') {
        identifiers ??= new Set<string>();
        if (identifiers.has(identifier)) {
          found.push({
            path: `supply_addresses.${i}.supply_points.${j}.identifier`, code: 'duplicate',
            detail: `The electricity identifier "${identifier}" appears more than once in this account.`,
          });
        }
        identifiers.add(identifier);
      }
    }
  }
}

const POSTCODE_MAX = 20;

/** A postcode in bounds and not empty (else the schema reports it), checked in `country`. */
function checkPostcode(value: unknown, country: string, path: string, found: RuleFinding[]): void {
  if (typeof value !== 'string' || value === '' || value.length > POSTCODE_MAX) return;
  const detail = postcodeProblem(value, country);
  if (detail) found.push({ path, code: 'invalid_postcode', detail });
}

/** The billing and supply postcodes, read in the billing country (when it is usable). */
function checkPostcodes(account: Record<string, unknown>, found: RuleFinding[]): void {
  const billing = objectOf(account.billing_address);
  const country = billing?.country;
  if (typeof country !== 'string' || !isCountryCode(country)) return;
  checkPostcode(billing?.postal_code, country, 'billing_address.postal_code', found);
  const addresses = arrayOf(account.supply_addresses);
  for (let i = 0; i < addresses.length; i += 1) {
    checkPostcode(objectOf(addresses[i])?.supply_postcode, country, `supply_addresses.${i}.supply_postcode`, found);
  }
}

const checkAccountData: RuleCheck = (value) => {
  const account = objectOf(value);
  if (!account) return NO_FINDINGS;
  const found: RuleFinding[] = [];
  checkPhones(account, found);
  checkPostcodes(account, found);
  checkSupplyPoints(account, found);
  return found.length > 0 ? found : NO_FINDINGS;
};

export const ACCOUNT_DATA_RULES = { 'account-data': checkAccountData } satisfies Record<string, RuleCheck>;
