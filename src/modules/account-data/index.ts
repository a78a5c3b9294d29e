// The account data module's surface: the account data schema and its check (validate-account), the
// note schema other modules' bodies reuse, the postcode normalisation, the OpenAPI examples, the routes.
export { ACCOUNT_DATA_REFUSED, EXAMPLE_ACCOUNT, EXAMPLE_ACCOUNT_NUMBER, IMPORT_SUPPLIER_NOT_FOUND } from './account-data.examples.ts';
export { accountDataRoutes } from './account-data.routes.ts';
export { AccountData, type SupplyPoint, validateAccountData } from './account-data.schemas.ts';
export { DocumentPath, Note } from './note.schemas.ts';
export { withNormalisedPostcodes } from './postcodes.ts';
