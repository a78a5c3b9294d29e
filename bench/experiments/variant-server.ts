import { pino } from 'pino';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { openStore } from '../../src/db/store.ts';
import { createTokenService } from '../../src/modules/auth/token.service.ts';
import { storeDirectory } from '../../src/core/directory.ts';
import { systemClock } from '../../src/core/clock.ts';
import type { Caller } from '../../src/core/caller.ts';
import { composeModules } from '../../src/composition.ts';

// An experiment, not the product: the service's own app with one thing changed, to measure what a
// proposed fix would buy before anyone makes it. VARIANT=auth-cache keeps a verified token's caller
// for 1 s (one database round trip less per request); POOL=N sets the pool size; LOG_LEVEL as usual.
const config = loadConfig();
const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: Number(process.env.POOL ?? 20) });
const base = await createTokenService({ db: store.db, directory: storeDirectory(store.db), clock: systemClock }, config);
const cache = new Map<string, { caller: Caller; until: number }>();
const tokens = process.env.VARIANT === 'auth-cache'
  ? {
    ...base,
    async authenticate(token: string) {
      const hit = cache.get(token);
      if (hit && hit.until > Date.now()) return hit.caller;
      const caller = await base.authenticate(token);
      cache.set(token, { caller, until: Date.now() + 1000 });
      return caller;
    },
  }
  : base;
const logger = pino({ level: config.logLevel });
const modules = await composeModules({ config, store, logger });
const app = await buildApp({ modules: { ...modules, tokens }, logger });
await app.listen({ host: config.host, port: config.port });
process.on('SIGTERM', () => { void app.close().then(() => store.close()).then(() => process.exit(0)); });
