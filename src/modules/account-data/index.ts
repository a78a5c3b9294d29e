// The account data module's surface: the account data schema and its check (validate-account), the
// note schema other modules' bodies reuse, the postcode normalisation, the OpenAPI examples, the routes;
// for the tests, the closed lists of the supply points' fields and whether the phone library runs with
// its patterns compiled once and its parse called directly.
export { ACCOUNT_DATA_REFUSED, EXAMPLE_ACCOUNT, EXAMPLE_ACCOUNT_NUMBER, EXAMPLE_SERVICE_ACCOUNT_NUMBER, IMPORT_SUPPLIER_NOT_FOUND } from './account-data.examples.ts';
export { accountDataRoutes } from './account-data.routes.ts';
export { AccountData, type SupplyPoint, validateAccountData } from './account-data.schemas.ts';
export { DocumentPath, documentPathsOf, Note } from './note.schemas.ts';
export { phoneParseDirect, phonePatternsCompiledOnce } from './phone-library.ts';
export { withNormalisedPostcodes } from './stored-postcodes.ts';
export {
  COVER_MATERIALS, ENERGIZATION_STATUSES, METER_BASES, METER_PHASES, METER_STATUSES, REGISTER_TYPES, SUPPLY_TYPES,
} from './supply-points.schemas.ts';
