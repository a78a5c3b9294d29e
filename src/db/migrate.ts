import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Store } from './store.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));
// Any constant works; it only has to be the same for every instance.
const MIGRATION_LOCK_KEY = 727_100_001;

/**
 * Applies the SQL files of /migrations in name order, each once and in its own transaction, under a
 * session advisory lock so that instances starting together apply them exactly once (the second
 * waits, then finds them recorded). Returns the names it applied.
 */
export async function migrate(store: Pick<Store, 'withSession'>): Promise<string[]> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return store.withSession(async (run) => {
    await run(`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
    try {
      await run('CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
      const done = new Set((await run<{ name: string }>('SELECT name FROM schema_migrations')).map((r) => r.name));
      const applied: string[] = [];
      for (const file of files.filter((f) => !done.has(f))) {
        const script = await readFile(`${MIGRATIONS_DIR}${file}`, 'utf8');
        try {
          await run(`BEGIN;\n${script}\n;INSERT INTO schema_migrations (name) VALUES ('${file}');\nCOMMIT;`);
        } catch (error) {
          await run('ROLLBACK').catch(() => {});
          throw new Error(`migration ${file} failed: ${(error as Error).message}`, { cause: error });
        }
        applied.push(file);
      }
      return applied;
    } finally {
      await run(`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`).catch(() => {});
    }
  });
}
