import { GraphQLError, type ValidationRule } from 'graphql';

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
