import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The validate-account body path of a copy of src/ (the current one, or an earlier one for a
 * same-run comparison), as the app runs it between the socket and the handler: the JSON parse, the
 * passes over the text that body-encoding.ts makes (numbers the parse changed; text PostgreSQL
 * cannot store, where the version has it), and the AccountData validator compiled as app.ts does.
 * Answers null, or the field errors in order.
 */
export async function bodyCheckOf(srcDir: string): Promise<(text: string) => unknown> {
  const load = async (path: string) => import(pathToFileURL(join(srcDir, path)).href) as Promise<any>;
  const validation = await load('core/validation.ts');
  const numbers = await load('core/json-numbers.ts');
  const unstorable = await load('core/unstorable-text.ts');
  const recordStorableText = (unstorable.recordStorableText ?? (() => {})) as (text: string, value: unknown) => void;
  const { AccountData } = await load('modules/account-data/account-data.schemas.ts');
  const validate = validation.compileValidator(AccountData, validation.bodyAjv) as (data: unknown) => unknown;
  return (text) => {
    const value: unknown = JSON.parse(text);
    numbers.recordInexactNumbers(text, value);
    recordStorableText(text, value);
    return validate(value);
  };
}
