import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { openStore, type Store } from '../../src/db/store.ts';
import { findSupplierByCode, findTeamByName } from '../../src/modules/admin/admin.repository.ts';
import * as admin from '../../src/modules/admin/admin.service.ts';
import { createTokenService } from '../../src/modules/auth/token.service.ts';
import { storeDirectory } from '../../src/core/directory.ts';
import { systemClock } from '../../src/core/clock.ts';
import type { RawTarget } from '../baselines/raw-db.ts';
import type { BenchStore } from '../config.ts';

// A fresh database per store and per run, provisioned through the admin service (the functions the
// import-admin CLI calls) over the same DATABASE_URL / DATA_DIR the service will use.
export const TOKEN_SECRET = 'bench-token-secret-0123456789abcdefghijklmnopqrstuvwxyz';
export const TOKEN_TTL_SECONDS = 24 * 3600;

export interface Target { kind: BenchStore; env: Record<string, string>; raw: RawTarget; open(): Promise<Store> }

export async function freshTarget(kind: BenchStore, adminUrl: string, name: string): Promise<Target> {
  if (kind === 'postgres') {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`CREATE DATABASE ${name}`);
    await client.end();
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const databaseUrl = url.toString();
    return { kind, env: { DATABASE_URL: databaseUrl }, raw: { kind, url: databaseUrl }, open: () => openStore({ databaseUrl }) };
  }
  const dataDir = mkdtempSync(join(tmpdir(), `${name}-`));
  return { kind, env: { DATA_DIR: dataDir }, raw: { kind, dataDir }, open: () => openStore({ dataDir }) };
}

export async function dropDatabases(adminUrl: string, names: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  for (const name of names) await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
  await client.end();
}

export interface Tenant {
  token: string;
  supplier: string;
  bigSupplier: string;
  team: string;
  supplierId: number;
  bigSupplierId: number;
  teamId: number;
}

/** Migrates, then makes an organisation with a key, two ongoing suppliers and a team, and a token. */
export async function provision(target: Target): Promise<Tenant> {
  const store = await target.open();
  try {
    await migrate(store);
    const db = store.db;
    const { organisation, api_key: apiKey } = await admin.createOrganisation(db, 'bench-org');
    const supplier = 'BENCH';
    const bigSupplier = 'BIG';
    await admin.createSupplier(db, supplier, organisation);
    await admin.createSupplier(db, bigSupplier, organisation);
    await admin.createTeam(db, 'bench-team');
    const tokens = await createTokenService({ db, directory: storeDirectory(db), clock: systemClock }, { tokenSecret: TOKEN_SECRET, tokenTtlSeconds: TOKEN_TTL_SECONDS, refreshTokenTtlSeconds: TOKEN_TTL_SECONDS });
    const { token } = await tokens.obtainWithApiKey(apiKey);
    const s = await findSupplierByCode(db, supplier);
    const b = await findSupplierByCode(db, bigSupplier);
    const t = await findTeamByName(db, 'bench-team');
    return { token, supplier, bigSupplier, team: 'bench-team', supplierId: s!.id, bigSupplierId: b!.id, teamId: t!.id };
  } finally {
    await store.close();
  }
}

export function serviceEnv(target: Target, logLevel: string): Record<string, string> {
  return {
    ...target.env,
    DEMO_SEED: 'false',
    TOKEN_SECRET,
    TOKEN_TTL_SECONDS: String(TOKEN_TTL_SECONDS),
    LOG_LEVEL: logLevel,
    EMAIL_TRANSPORT: 'log',
    // No load balancer to tell: the service stops without the readiness drain between rows.
    SHUTDOWN_DRAIN_MS: '0',
    // For experiments such as a heap cap (--max-old-space-size=N) on the service only.
    ...(process.env.BENCH_SERVICE_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_SERVICE_NODE_OPTIONS } : {}),
  };
}
