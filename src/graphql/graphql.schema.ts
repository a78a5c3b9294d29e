import {
  GraphQLError, GraphQLInputObjectType, GraphQLInt, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString,
} from 'graphql';
import { AppError } from '../core/errors.ts';
import type { AuthThrottle } from '../modules/auth/index.ts';
import type { TokenPair, TokenService } from '../modules/auth/index.ts';

// The GraphQL interface of D3: one mutation, obtainToken, that trades an organisation API key or a
// refresh token for a token pair. `input` is a @oneOf input, so the library itself rejects a request
// that gives both or neither. A failure is a GraphQL error with `extensions.code` and a null result.
export interface GraphqlContext {
  tokens: TokenService;
  throttle: AuthThrottle;
  /** The client's address, for the throttle. */
  address: string;
  /** Set when the throttle refused: the route answers 429 with this Retry-After. */
  retryAfter?: string;
}

export interface ObtainTokenInput { APIKey?: string; refreshToken?: string }

const ObtainTokenInputType = new GraphQLInputObjectType({
  name: 'ObtainTokenInput',
  description: 'Exactly one of APIKey (the organisation API key from the service team) or refreshToken.',
  isOneOf: true,
  fields: {
    APIKey: { type: GraphQLString, description: 'The organisation API key, `ak_<prefix>.<secret>`.' },
    refreshToken: { type: GraphQLString, description: 'A refresh token from an earlier obtainToken.' },
  },
});

const ObtainTokenPayloadType = new GraphQLObjectType<TokenPair>({
  name: 'ObtainTokenPayload',
  fields: {
    token: { type: new GraphQLNonNull(GraphQLString), description: 'Send as `Authorization: Token <token>` on REST calls.' },
    expiresIn: { type: new GraphQLNonNull(GraphQLInt), description: 'Seconds until the token expires.' },
    refreshToken: { type: new GraphQLNonNull(GraphQLString), description: 'Trade it for a new pair before it expires.' },
    refreshExpiresIn: { type: new GraphQLNonNull(GraphQLInt), description: 'Seconds until the refresh token expires.' },
  },
});

const MutationType = new GraphQLObjectType<unknown, GraphqlContext>({
  name: 'Mutation',
  fields: {
    obtainToken: {
      // Nullable, so that a failure answers `data: {obtainToken: null}` beside the error.
      type: ObtainTokenPayloadType,
      description: 'Issues a token and a refresh token for an API key, or for a refresh token.',
      args: { input: { type: new GraphQLNonNull(ObtainTokenInputType) } },
      resolve: async (_root, args: { input: ObtainTokenInput }, context) => {
        const { tokens, throttle, address } = context;
        const { APIKey, refreshToken } = args.input;
        try {
          await throttle.check(address, APIKey);
          return APIKey !== undefined
            ? await tokens.obtainWithApiKey(APIKey)
            : await tokens.obtainWithRefreshToken(refreshToken ?? '');
        } catch (error) {
          if (error instanceof AppError) {
            if (error.code === 'too_many_requests') context.retryAfter = error.headers?.['Retry-After'];
            // An expired refresh token is an honest client's mistake; a wrong key or token is counted.
            if (error.code === 'authentication_failed') await throttle.recordFailure(address, APIKey);
            throw new GraphQLError(error.detail, { extensions: { code: error.code } });
          }
          throw error;
        }
      },
    },
  },
});

// GraphQL requires a query root; this one only tells a client which interface it reached.
const QueryType = new GraphQLObjectType({
  name: 'Query',
  fields: {
    apiVersion: { type: new GraphQLNonNull(GraphQLString), resolve: () => 'v1' },
  },
});

export const graphqlSchema = new GraphQLSchema({ query: QueryType, mutation: MutationType });
