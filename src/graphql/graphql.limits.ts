import { GraphQLError, Lexer, Source, TokenKind, type ValidationRule } from 'graphql';

// Aliases let one request run the same field many times (`a: obtainToken(…) b: obtainToken(…) …`):
// 200 key guesses in one request. A client needs one token per request; these caps leave room for
// a few root fields and operations and refuse the rest before anything runs (400 invalid).
export const MAX_OPERATIONS = 5;
export const MAX_ROOT_FIELDS = 5;

/** At most MAX_OPERATIONS operations, and MAX_ROOT_FIELDS root fields (aliases and fragments included). */
export const limitOperationsAndAliases: ValidationRule = (context) => {
  const schema = context.getSchema();
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].filter(Boolean));
  let operations = 0;
  let rootFields = 0;
  return {
    OperationDefinition(node) {
      if (++operations === MAX_OPERATIONS + 1) {
        context.reportError(new GraphQLError(`A request may hold at most ${MAX_OPERATIONS} operations.`, { nodes: node }));
      }
    },
    Field(node) {
      const parent = context.getParentType();
      if (!parent || !roots.has(parent as never) || node.name.value.startsWith('__')) return;
      if (++rootFields === MAX_ROOT_FIELDS + 1) {
        context.reportError(new GraphQLError(`A request may select at most ${MAX_ROOT_FIELDS} root fields, aliases included.`, { nodes: node }));
      }
    },
  };
};

// graphql-js parses by recursion: a query nested a few thousand levels deep (`{a{a{a…`, or a list
// value `[[[…`) overflows the stack inside `parse`, well under the token cap. Real queries nest a
// few levels (introspection about ten), so nesting is counted on the tokens first, without recursion.
export const MAX_DEPTH = 64;
const OPENING = new Set<string>([TokenKind.BRACE_L, TokenKind.BRACKET_L, TokenKind.PAREN_L]);
const CLOSING = new Set<string>([TokenKind.BRACE_R, TokenKind.BRACKET_R, TokenKind.PAREN_R]);

/**
 * A GraphQLError when the query's braces, brackets and parentheses nest deeper than MAX_DEPTH, else
 * null. Stops at `maxTokens` (parse then refuses the query itself); a lexical error is thrown as
 * parse would throw it.
 */
export function nestingError(query: string, maxTokens: number): GraphQLError | null {
  const lexer = new Lexer(new Source(query));
  let depth = 0;
  for (let token = lexer.advance(), count = 1; token.kind !== TokenKind.EOF && count <= maxTokens; token = lexer.advance(), count++) {
    if (CLOSING.has(token.kind)) depth--;
    else if (OPENING.has(token.kind) && ++depth > MAX_DEPTH) {
      return new GraphQLError(`Syntax Error: the query nests more than ${MAX_DEPTH} levels deep.`, { source: lexer.source, positions: [token.start] });
    }
  }
  return null;
}
