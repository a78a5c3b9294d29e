// The account imports module's surface: the module (stage, create, status and a chunk's set create,
// built once per process over its staging writer), the account tree's rows (read back by reconciliation
// and drift), the set create of a migration job's new accounts, the advisory locks held (the stats read
// them; pg_locks is read in one place), the routes; for the tests, the advisory lock keys a create takes
// (held by hand), the account tree's direct write, the lists' stream chunk size and the OpenAPI examples.
export { ALREADY_IMPORTED, STAGED } from './account-imports.examples.ts';
export { accountImportsRoutes } from './account-imports.routes.ts';
export { findStagedNumbers } from './account-imports.repository.ts';
export { STREAM_CHUNK_ROWS } from './account-lists.service.ts';
export { accountTreeRows, supplyPointsOf } from './account-tree.builder.ts';
export { type AccountTreeRows, findRegisteredIdentifiers, insertAccountWithTree } from './account-tree.repository.ts';
export { createImports, type Imports } from './account-imports.module.ts';
export { type NewAccount } from './create-account.service.ts';
export { accountLockKey, heldLocks, SLOT_LOCK_SPACE } from './import-locks.repository.ts';
