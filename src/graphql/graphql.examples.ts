// OpenAPI examples of POST /graphql. The key is a placeholder: the demo API key is printed at the
// first start of a fresh service (test/http/openapi-examples.test.ts puts the real one in).

export const OBTAIN_TOKEN = {
  query: 'mutation ObtainToken($key: String!) { obtainToken(input: {APIKey: $key}) { token expiresIn refreshToken refreshExpiresIn } }',
  variables: { key: 'ak_0123456789ab.the-demo-api-key-printed-at-the-first-start' },
};

const error = (message: string, code: string) => ({ errors: [{ message, extensions: { code } }] });

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
  413: error('The request body is larger than the limit.', 'payload_too_large'),
  415: error('Send the body as application/json.', 'unsupported_media_type'),
  500: error('An unexpected error occurred. It has been logged with this request id.', 'internal_error'),
  503: error('The database is unavailable; retry shortly.', 'service_unavailable'),
} as const;
