// The admin module's surface: the admin services (import-admin, the tests' set-up), the lookups
// the token service, the jobs and the webhooks make of organisations, teams and API keys, the API
// key format, and the demo seed main.ts runs.
export { findApiKeyByPrefix, findOrganisationByName, findSupplierByCode, findTeamByName } from './admin.repository.ts';
export * from './admin.service.ts';
export { secretMatches, splitKey } from './api-keys.ts';
export { DEMO, demoBanner, demoKeyFileInUse, seedDemo, writeDemoKeyFile } from './demo-seed.ts';
