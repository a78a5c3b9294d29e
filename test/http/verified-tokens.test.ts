import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { verifiedTokens } from '../../src/modules/auth/token.service.ts';

// The memory of verified access tokens (token.service.ts). Over HTTP, auth.test.ts shows a used
// token refused once expired and a revoked key's tokens cut off at once; here, what is verified again.
describe('verified access tokens', () => {
  const now = () => Math.floor(Date.now() / 1000);
  const counting = (exp: (token: string) => number | undefined) => {
    const calls: string[] = [];
    const verify = (token: string) => {
      calls.push(token);
      if (token.startsWith('bad')) throw new Error('invalid signature');
      const e = exp(token);
      return { typ: 'access', key: 1, sub: '1', ...(e === undefined ? {} : { exp: e }) };
    };
    return { calls, verify };
  };

  test('a token is verified once while it is valid, again once past its exp', () => {
    let exp = now() + 60;
    const { calls, verify } = counting(() => exp);
    const verified = verifiedTokens(verify);
    assert.equal(verified('a').key, 1);
    verified('a');
    verified('a');
    assert.deepEqual(calls, ['a']);
    exp = now() - 1;
    // The kept claims still say +60 s: only a new verification sees the past exp (here, accepted by
    // this fake; fast-jwt refuses it as expired, as auth.test.ts shows over HTTP).
    verified('b');
    verified('b');
    assert.deepEqual(calls, ['a', 'b', 'b']);
  });

  test('a refused token and one without exp are never kept', () => {
    const { calls, verify } = counting((token) => (token === 'no-exp' ? undefined : now() + 60));
    const verified = verifiedTokens(verify);
    assert.throws(() => verified('bad'));
    assert.throws(() => verified('bad'));
    verified('no-exp');
    verified('no-exp');
    assert.deepEqual(calls, ['bad', 'bad', 'no-exp', 'no-exp']);
  });

  test('memory is bounded: past the bound it starts again, empty', () => {
    const { calls, verify } = counting(() => now() + 60);
    const verified = verifiedTokens(verify, 2);
    verified('a');
    verified('b');
    verified('a');
    assert.deepEqual(calls, ['a', 'b']);
    verified('c'); // the third: the kept ones are dropped, 'c' alone is kept
    verified('a');
    verified('c');
    assert.deepEqual(calls, ['a', 'b', 'c', 'a']);
  });
});
