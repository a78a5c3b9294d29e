// The statements module's surface: the import service (the route's and a migration record's), the
// body schema, an account's statements (the account read), the routes; for the tests, the OpenAPI example.
export { IMPORT_STATEMENTS } from './statements.examples.ts';
export { findStatements } from './statements.repository.ts';
export { statementsRoutes } from './statements.routes.ts';
export { CreateStatementsBody } from './statements.schemas.ts';
export { checkStatements, createStatements, statementRows, type Statements } from './statements.service.ts';
export { statementsInsert } from './statements.repository.ts';
