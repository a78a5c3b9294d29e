import { messageFor, type ErrorCode } from '../core/errors.ts';

// OpenAPI examples of POST /graphql. The key is a placeholder: the demo API key is printed at the
// first start of a fresh service (test/http/openapi-examples.test.ts puts the real one in).

export const OBTAIN_TOKEN = {
  query: 'mutation ObtainToken($key: String!) { obtainToken(input: {APIKey: $key}) { token expiresIn refreshToken refreshExpiresIn } }',
  variables: { key: 'ak_0123456789ab.the-demo-api-key-printed-at-the-first-start' },
};

const error = (code: ErrorCode) => ({ errors: [{ message: messageFor(code), extensions: { code } }] });

export const GRAPHQL_ANSWERS = {
  200: {
    data: {
      obtainToken: {
        token: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZW1vIn0.c2lnbmF0dXJl', expiresIn: 3600,
        refreshToken: 'eyJhbGciOiJIUzI1NiJ9.eyJ0eXAiOiJyZWZyZXNoIn0.c2lnbmF0dXJl', refreshExpiresIn: 604800,
      },
    },
  },
  400: { errors: [{ message: 'Syntax Error: Expected Name, found "}".', locations: [{ line: 1, column: 42 }], extensions: { code: 'parse_error' } }] },
  413: error('payload_too_large'),
  415: error('unsupported_media_type'),
  500: error('internal_error'),
  503: error('service_unavailable'),
} as const;
