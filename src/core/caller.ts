import type { Supplier } from '../db/schema.ts';

/** Who is calling: the organisation a token (or a job) acts for, and the API key it came from. */
export interface Caller {
  organisationId: number;
  apiKeyId: number;
  /**
   * A supplier row the caller's own work read a moment ago (a migration record: the one read with
   * its job, for that record's steps), used instead of reading it again when a step names it.
   */
  knownSupplier?: Supplier;
}
