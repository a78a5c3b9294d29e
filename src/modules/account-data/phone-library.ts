import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as PhoneLibrary from 'libphonenumber-js/max';

// libphonenumber-js with its full ("max") metadata: D5's real phone-number library. Two changes to
// how it runs (its patterns compiled once; its parse called directly, below), none to what it
// answers. The library tests a number against its metadata through one helper,
// matchesEntirely(text, pattern), which builds `new RegExp('^(?:' + pattern + ')$')` on every
// call: about twenty regular expressions per number, some of several hundred characters, which made
// the phone checks a third of the cost of validating an account. Here each pattern is compiled once
// and kept. The patterns come from the metadata (a few thousand at most; the map stops growing at
// MAX_PATTERNS anyway) and a RegExp without the g or y flag keeps no state between tests, so every
// answer is the library's own (test/http/validate-account.test.ts pins accepted and refused numbers).
//
// The helper is replaced in the library's CommonJS build, whose modules look it up on its exports
// object at every call (`(0, _matchesEntirely.default)(…)`); the ES build binds it once at import and
// cannot be changed. Should a later version move the helper, nothing is replaced: the same answers,
// only slower (bench/experiments/validate-profile.ts shows it).

const loadCommonJs = createRequire(import.meta.url);
const library = loadCommonJs('libphonenumber-js/max') as typeof PhoneLibrary;

const MAX_PATTERNS = 10_000;
const compiled = new Map<string, RegExp>();

function matchesEntirely(text: string | undefined, pattern: string): boolean {
  let regExp = compiled.get(pattern);
  if (regExp === undefined) {
    regExp = new RegExp(`^(?:${pattern})$`);
    if (compiled.size < MAX_PATTERNS) compiled.set(pattern, regExp);
  }
  return regExp.test(text || '');
}

/** Replaces the library's helper; false when it is not where this version keeps it. */
function compilePatternsOnce(): boolean {
  try {
    // The package's exports map hides its build folder, so the helper is found beside the entry point.
    const helperFile = join(dirname(loadCommonJs.resolve('libphonenumber-js/max')), '../build/helpers/matchesEntirely.js');
    const helper = loadCommonJs(helperFile) as { default?: unknown };
    if (typeof helper.default !== 'function') return false;
    helper.default = matchesEntirely;
    return true;
  } catch {
    // Moved or renamed in another version: run the library as it is.
    return false;
  }
}

/** Whether the library runs with the compiled patterns (a test checks it, so an upgrade that moves the helper is noticed). */
export const phonePatternsCompiledOnce = compilePatternsOnce();

// The parse itself, called without the public function's layers. `parsePhoneNumberFromString(text,
// options)` of the max build copies its arguments and appends the metadata (`call`), normalises
// them (`normalizeArguments`), drops a default country the metadata does not know, and copies the
// options twice more with Babel's object-spread helper to add `v2: true` before it calls the
// library's `parse(text, { v2: true, … }, metadata)`, answering undefined for a ParseError. Those
// layers were about a quarter of what a phone check cost (the bench body's three numbers: 17 → 13 µs).
// Here the same `parse` is called with the same options and the same metadata, and a ParseError is
// undefined as there: the same PhoneNumber, or the same undefined, for every input. As with the
// helper above, a version that moves `parse` or `ParseError` gets the public function instead.
type ParsedPhoneNumber = NonNullable<ReturnType<typeof PhoneLibrary.parsePhoneNumberFromString>>;
type ParseFunction = (text: string, options: { v2: true; defaultCountry: string | undefined; extract: false }, metadata: unknown) => ParsedPhoneNumber;

function libraryParse(): { parse: ParseFunction; ParseError: new () => Error; metadata: unknown } | undefined {
  try {
    const build = join(dirname(loadCommonJs.resolve('libphonenumber-js/max')), '../build');
    const parse = (loadCommonJs(join(build, 'parse.js')) as { default?: unknown }).default;
    const ParseError = (loadCommonJs(join(build, 'ParseError.js')) as { default?: unknown }).default;
    const metadata = loadCommonJs('libphonenumber-js/metadata.max.json') as unknown;
    if (typeof parse !== 'function' || typeof ParseError !== 'function' || ParseError !== library.ParseError) return undefined;
    return { parse: parse as ParseFunction, ParseError: ParseError as new () => Error, metadata };
  } catch {
    return undefined;
  }
}

const direct = libraryParse();

/** Whether phone numbers are parsed without the public function's layers (a test checks it, as above). */
export const phoneParseDirect = direct !== undefined;

/**
 * `parsePhoneNumberFromString(text, { defaultCountry, extract: false })` of libphonenumber-js/max:
 * the number (`defaultCountry` reads a number without `+`), or undefined when it cannot be parsed.
 */
export function parsePhoneNumber(text: string, defaultCountry: string | undefined): ParsedPhoneNumber | undefined {
  if (!direct) {
    return library.parsePhoneNumberFromString(text, defaultCountry === undefined
      ? { extract: false }
      : { defaultCountry: defaultCountry as PhoneLibrary.CountryCode, extract: false });
  }
  // The public function forgets a default country its metadata does not know.
  const known = defaultCountry !== undefined && library.isSupportedCountry(defaultCountry) ? defaultCountry : undefined;
  try {
    return direct.parse(text, { v2: true, defaultCountry: known, extract: false }, direct.metadata);
  } catch (error) {
    if (error instanceof direct.ParseError) return undefined;
    throw error;
  }
}
