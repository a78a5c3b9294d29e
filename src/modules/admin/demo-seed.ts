import type { Kysely } from 'kysely';
import { closeSync, fchmodSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { AppError } from '../../core/errors.ts';
import type { Database } from '../../db/schema.ts';
import { countOrganisations, findApiKeyByPrefix, findOrganisationByName, findTeamByName } from './admin.repository.ts';
import { createOrganisation, createSupplier, createTeam } from './admin.service.ts';

// A fresh store with no organisation at all gets something to try the API with at once (D2): an
// organisation, an ongoing supplier and a team. The key is returned to be printed, once.
export const DEMO = { organisation: 'demo', supplier: 'DEMO', team: 'Operations' } as const;

export interface DemoSeed { organisation: string; supplier: string; team: string; apiKey: string }

/** Seeds the demo data when there is no organisation yet; null when there was something already. */
export async function seedDemo(db: Kysely<Database>): Promise<DemoSeed | null> {
  if ((await countOrganisations(db)).n > 0) return null;
  let apiKey: string;
  try {
    ({ api_key: apiKey } = await createOrganisation(db, DEMO.organisation));
  } catch (error) {
    // Another instance seeded in the meantime (several servers over one empty PostgreSQL).
    if (error instanceof AppError && error.code === 'already_exists') return null;
    throw error;
  }
  await createSupplier(db, DEMO.supplier, DEMO.organisation);
  // A team can exist before any organisation (created with the CLI): use it as it is.
  if (!(await findTeamByName(db, DEMO.team))) await createTeam(db, DEMO.team);
  return { ...DEMO, apiKey };
}

// The key is shown once on the console, and kept in a file readable by this user only, so that a
// start that fails after seeding (the port taken) or a console scrolled away does not lose it.
export const DEMO_KEY_FILE = 'demo-key.txt';

/** Writes the key to `dir`/demo-key.txt with mode 600; returns the file's absolute path. */
export function writeDemoKeyFile(dir: string, apiKey: string): string {
  const path = resolve(dir, DEMO_KEY_FILE);
  mkdirSync(resolve(dir), { recursive: true });
  const fd = openSync(path, 'w', 0o600);
  try {
    fchmodSync(fd, 0o600); // a file that existed keeps its mode through open: tighten it before writing
    writeSync(fd, `${apiKey}\n`);
  } finally {
    closeSync(fd);
  }
  return path;
}

/**
 * On a later start: the key file's path when it holds a key of the demo organisation that is still
 * valid (not revoked), so the console can say where it is; null otherwise.
 */
export async function demoKeyFileInUse(db: Kysely<Database>, dir: string): Promise<string | null> {
  const path = resolve(dir, DEMO_KEY_FILE);
  let apiKey: string;
  try {
    apiKey = readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
  const [key, organisation] = await Promise.all([
    findApiKeyByPrefix(db, apiKey.split('.')[0] ?? ''), findOrganisationByName(db, DEMO.organisation),
  ]);
  return key && key.revoked_at === null && organisation && key.organisation_id === organisation.id ? path : null;
}

/** What a newcomer reads on the console: what was created, the key, and curl lines to try it. */
export function demoBanner(seed: DemoSeed, baseUrl: string, keyFile: string | null): string {
  const mutation = `mutation ObtainToken { obtainToken(input: {APIKey: \\"${seed.apiKey}\\"}) { token expiresIn refreshToken refreshExpiresIn } }`;
  const obtain = `curl -s -X POST ${baseUrl}/graphql -H 'Content-Type: application/json' -d '{"query": "${mutation}"}'`;
  const extract = `node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).data.obtainToken.token))'`;
  return [
    '',
    '================================================================================',
    ' DEMO DATA CREATED: this store had no organisation, so the service created',
    `   organisation "${seed.organisation}", import supplier "${seed.supplier}" (ongoing), operations team "${seed.team}"`,
    '',
    ` Demo API key: ${seed.apiKey}`,
    keyFile ? `   (also saved in ${keyFile}, readable by you only)` : '   (not saved to a file: see the log)',
    '',
    ' Get a token:',
    `   ${obtain}`,
    '',
    ' Or keep the token in a shell variable and call the REST API with it:',
    `   TOKEN=$(${obtain} | ${extract})`,
    `   curl -s ${baseUrl}/v1/data-import/all-account-import-processes/${seed.supplier}/ -H "Authorization: Token $TOKEN"`,
    '',
    ' Another key later: npx import-admin key create demo (the server may keep running)',
    ' (set DEMO_SEED=false to start with an empty store instead)',
    '================================================================================',
    '',
  ].join('\n');
}
