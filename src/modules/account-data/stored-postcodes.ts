import type { AccountData } from './account-data.schemas.ts';
import { normalisedPostcode } from './postcodes.ts';

// Apart from postcodes.ts, whose checks the schemas' rules use: the stored form needs the schemas'
// type, and the checks must not (a cycle otherwise).

/**
 * The account data with its postcodes in their stored form (only GB ones change). The data has
 * passed validation; the same object is answered when nothing changes.
 */
export function withNormalisedPostcodes(data: AccountData): AccountData {
  const country = data.billing_address.country;
  if (country !== 'GB') return data;
  const billing = normalisedPostcode(data.billing_address.postal_code, country);
  let changed = billing !== data.billing_address.postal_code;
  const addresses = data.supply_addresses.map((address) => {
    const postcode = normalisedPostcode(address.supply_postcode, country);
    if (postcode === address.supply_postcode) return address;
    changed = true;
    return { ...address, supply_postcode: postcode };
  });
  if (!changed) return data;
  return { ...data, billing_address: { ...data.billing_address, postal_code: billing }, supply_addresses: addresses };
}
