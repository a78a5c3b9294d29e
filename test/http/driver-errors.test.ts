import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isStoreUnavailable, isUniqueViolation, isUnstorableInput } from '../../src/db/errors.ts';

// Driver errors are told apart in one place (src/db/errors.ts), by SQLSTATE, constraint name and
// socket code; pg's client-side failures, which carry no code, by their exact messages only.
const withCode = (code: string, message = 'any text', extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { code, ...extra });

describe('driver errors by SQLSTATE', () => {
  test('a unique violation, optionally of one constraint', () => {
    const error = withCode('23505', 'duplicate key value violates unique constraint', { constraint: 'accounts_number_key' });
    assert.equal(isUniqueViolation(error), true);
    assert.equal(isUniqueViolation(error, 'accounts_number_key'), true);
    assert.equal(isUniqueViolation(error, 'accounts_account_import_id_key'), false);
    assert.equal(isUniqueViolation(withCode('23503', 'duplicate key value violates unique constraint')), false, 'the text alone is not enough');
  });

  test('input the store cannot keep', () => {
    assert.deepEqual(['22021', '22P05', '54001', '22P02', '23505'].map((code) => isUnstorableInput(withCode(code))),
      [true, true, true, false, false]);
  });

  test('a lost store: server shutdown, connection, session timeout and connection limit SQLSTATEs, socket codes, pg\'s code-less client failures', () => {
    const codes = ['57P01', '57P02', '57P03', '08000', '08003', '08006', '25P03', '57P05', '53300', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'];
    assert.deepEqual(codes.filter((code) => !isStoreUnavailable(withCode(code))), []);
    const codeless = ['Connection terminated unexpectedly', 'Connection terminated', 'timeout exceeded when trying to connect',
      'Client has encountered a connection error and is not queryable', 'Client was closed and is not queryable'];
    assert.deepEqual(codeless.filter((message) => !isStoreUnavailable(new Error(message))), []);
  });

  test('anything else is not a lost store, whatever its message says', () => {
    assert.equal(isStoreUnavailable(withCode('23505', 'Connection terminated unexpectedly')), false, 'a SQLSTATE decides, not the text');
    assert.equal(isStoreUnavailable(withCode('57014', 'canceling statement due to statement timeout')), false);
    assert.equal(isStoreUnavailable(new Error('the query failed: Connection terminated unexpectedly')), false);
    assert.equal(isStoreUnavailable(new TypeError('x is not a function')), false);
    assert.equal(isStoreUnavailable(null), false);
    assert.equal(isStoreUnavailable('Connection terminated'), false);
  });
});
