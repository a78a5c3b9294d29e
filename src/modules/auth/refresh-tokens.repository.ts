import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';

// Refresh-token state (migration 008): one row per token issued, by its JWT id.

export interface NewRefreshToken { jti: string; familyId: string; apiKeyId: number; expiresAt: Date }

/** Records a token just issued, and drops rows whose tokens had expired at `now` (nothing can present them). */
export async function insertRefreshToken(db: Kysely<Database> | Transaction<Database>, token: NewRefreshToken, now: Date): Promise<void> {
  await db.deleteFrom('refresh_tokens').where('expires_at', '<', now).execute();
  await db.insertInto('refresh_tokens').values({
    jti: token.jti, family_id: token.familyId, api_key_id: token.apiKeyId, expires_at: token.expiresAt,
  }).execute();
}

export type RefreshTokenUse =
  | { kind: 'fresh'; familyId: string }
  | { kind: 'reused'; familyId: string }
  | { kind: 'unknown' };

/**
 * Marks the token used, if it was neither used nor revoked. The conditional UPDATE takes the row
 * lock: of two presentations at once, exactly one finds it fresh; the other sees it used.
 */
export async function useRefreshToken(trx: Transaction<Database>, jti: string): Promise<RefreshTokenUse> {
  const fresh = await trx.updateTable('refresh_tokens as t').set({ used_at: sql<Date>`now()` })
    .where('t.jti', '=', jti).where('t.used_at', 'is', null).where('t.revoked_at', 'is', null)
    // A family once revoked stays dead: a successor committed just after the revocation looked
    // (a rotation racing the reuse) is refused on its first use, and then revoked too.
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('refresh_tokens as f').select('f.jti')
      .whereRef('f.family_id', '=', 't.family_id').where('f.revoked_at', 'is not', null))))
    .returning('t.family_id').executeTakeFirst();
  if (fresh) return { kind: 'fresh', familyId: fresh.family_id };
  const row = await trx.selectFrom('refresh_tokens').select('family_id').where('jti', '=', jti).executeTakeFirst();
  return row ? { kind: 'reused', familyId: row.family_id } : { kind: 'unknown' };
}

/** Revokes every token of the family not revoked yet: the used ones, and their descendants. */
export async function revokeFamily(db: Kysely<Database>, familyId: string): Promise<void> {
  await db.updateTable('refresh_tokens').set({ revoked_at: sql<Date>`now()` })
    .where('family_id', '=', familyId).where('revoked_at', 'is', null).execute();
}
