import type { RuleCheck } from '../../core/rules.ts';
import { dayNumber } from '../../core/dates.ts';
import { BOUNDS, DRAMA_NUMBER_DETAIL, isCountryCode, isDramaNumber, isPhoneNumber, isRealDate } from './field-checks.ts';

// Cross-field rules of the account data (D5). They run on whatever was sent, even when the schema
// already failed it, so every access is guarded: a value of the wrong shape is skipped here (the
// schema reports it) rather than reported twice or thrown on.

type Found = ReturnType<RuleCheck>;

const objectOf = (value: unknown): Record<string, unknown> | undefined =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
const arrayOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** Landline and alternative numbers without `+` are read in the billing country (when it is usable). */
function checkPhones(account: Record<string, unknown>, found: Found): void {
  const country = objectOf(account.billing_address)?.country;
  const usableCountry = typeof country === 'string' && isCountryCode(country) ? country : undefined;
  const check = (value: unknown, path: string, emptyAllowed: boolean) => {
    if (typeof value !== 'string' || value.length > BOUNDS.phone) return;
    if (value === '' && emptyAllowed) return;
    // A national number cannot be read without a valid billing country; that country already has
    // its own error, and the number may be right once it is fixed.
    if (!value.startsWith('+') && value !== '' && !usableCountry) return;
    if (!isPhoneNumber(value, usableCountry)) {
      found.push({
        path, code: 'invalid_phone_number',
        detail: isDramaNumber(value, usableCountry) ? DRAMA_NUMBER_DETAIL
          : 'Enter a valid phone number: international with a leading +, or national in the billing address\'s country.',
      });
    }
  };
  arrayOf(account.customers).forEach((item, i) => {
    const customer = objectOf(item);
    if (!customer) return;
    check(customer.landline, `customers.${i}.landline`, true);
    arrayOf(customer.alternative_phone_numbers).forEach((alt, j) => {
      check(objectOf(alt)?.phone_number, `customers.${i}.alternative_phone_numbers.${j}.phone_number`, false);
    });
  });
}

/** last_billed_to_date ≥ supply_start_date; electricity identifiers unique within the payload. */
function checkSupplyPoints(account: Record<string, unknown>, found: Found): void {
  const identifiers = new Set<string>();
  arrayOf(account.supply_addresses).forEach((address, i) => {
    arrayOf(objectOf(address)?.supply_points).forEach((item, j) => {
      const point = objectOf(item);
      if (!point) return;
      const at = `supply_addresses.${i}.supply_points.${j}`;
      const start = point.supply_start_date;
      const end = point.last_billed_to_date;
      if (isRealDate(start) && isRealDate(end) && dayNumber(end) < dayNumber(start)) {
        found.push({
          path: `${at}.last_billed_to_date`, code: 'invalid_date_range',
          detail: 'last_billed_to_date must not be before supply_start_date.',
        });
      }
      if (point.supply_type === 'ELECTRICITY' && typeof point.identifier === 'string' && point.identifier !== '') {
        if (identifiers.has(point.identifier)) {
          found.push({
            path: `${at}.identifier`, code: 'duplicate',
            detail: `The electricity identifier "${point.identifier}" appears more than once in this account.`,
          });
        }
        identifiers.add(point.identifier);
      }
    });
  });
}

const checkAccountData: RuleCheck = (value) => {
  const account = objectOf(value);
  if (!account) return [];
  const found: Found = [];
  checkPhones(account, found);
  checkSupplyPoints(account, found);
  return found;
};

export const ACCOUNT_DATA_RULES = { 'account-data': checkAccountData } satisfies Record<string, RuleCheck>;
