import { isValid as isUkPostcode, toNormalised as normaliseUkPostcode } from 'postcode';
import { postcodeValidator, postcodeValidatorExistsForCountry } from 'postcode-validator';

// Postcodes: a GB postcode must be a real UK postcode format (the `postcode` library, which knows the
// outward and inward code shapes, including that "SW1A" and "M1" are areas and "PC1" is not) and is
// kept normalised (capitals, one space: "sw1a1aa" is "SW1A 1AA"); another country's postcode is checked
// against that country's format when `postcode-validator` knows the country, and kept as sent.
// Supply addresses carry no country of their own: they are read in the billing address's country.

/** Why `value` is not a postcode of `country`, or null when it is (or when the country has no known format). */
export function postcodeProblem(value: string, country: string): string | null {
  if (country === 'GB') {
    return isUkPostcode(value) ? null : `"${value}" is not a valid UK postcode (for example SW1A 1AA).`;
  }
  if (!postcodeValidatorExistsForCountry(country) || postcodeValidator(value, country)) return null;
  return `"${value}" is not a valid postcode for ${country}.`;
}

/** A postcode in its stored form: a GB one normalised, any other as sent. */
export const normalisedPostcode = (value: string, country: string): string =>
  country === 'GB' ? normaliseUkPostcode(value) ?? value : value;
