import type { Supplier } from '../db/schema.ts';

/** Who is calling: the organisation a token (or a job) acts for, and the API key it came from. */
export interface Caller {
  organisationId: number;
  apiKeyId: number;
  /**
   * The organisation's supplier with this code, or undefined (unknown, or another organisation's: D3).
   * A request looks it up in the instance's directory (core/directory.ts); a migration record answers
   * its job's own supplier from the row read with its claim.
   */
  findSupplier(code: string): Promise<Supplier | undefined>;
}
