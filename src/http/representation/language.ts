import type { ServerResponse } from 'node:http';
import { appendVary } from '../../internal/headers.js';

/** One member of a language priority list: a language range and its weight. */
export interface LanguageRange {
  /** A language range (RFC 4647 §2.1): `fr-CA`, `en`, or `*`, in lower case. */
  range: string;
  /** Its weight, `0` (not acceptable) to `1`. */
  q: number;
}

/** `1*8ALPHA *("-" 1*8alphanum)` or `*` (RFC 4647 §2.1). */
const RANGE = /^(?:[a-z]{1,8}(?:-[a-z0-9]{1,8})*|\*)$/i;

/** A weight as RFC 9110 §12.4.2 writes it: `0`, `0.5`, `0.123`, `1`, `1.000`. */
const WEIGHT = /^[ \t]*q=(0(?:\.\d{0,3})?|1(?:\.0{0,3})?)[ \t]*$/i;

/**
 * Parses an `Accept-Language` field value into its language ranges, highest weight first
 * (members of equal weight keep their order). Members that are not a language range, or
 * whose weight is not a valid `qvalue` (`q=2`, `q=-1`, `q=1e9`), are ignored; a missing or
 * empty field gives `[]`. Never throws, whatever the input: one pass over the value.
 *
 * @example
 * ```ts
 * parseAcceptLanguage('fr-CA,fr;q=0.9,en;q=0.5');
 * // [{ range: 'fr-ca', q: 1 }, { range: 'fr', q: 0.9 }, { range: 'en', q: 0.5 }]
 * parseAcceptLanguage('de;q=7, en'); // [{ range: 'en', q: 1 }]: q=7 is not a weight
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-12.5.4 | RFC 9110 §12.5.4}
 * @see {@link https://www.rfc-editor.org/rfc/rfc4647#section-2.1 | RFC 4647 §2.1}
 */
export function parseAcceptLanguage(
  header: string | readonly string[] | undefined,
): LanguageRange[] {
  const value = typeof header === 'string' ? header : Array.isArray(header) ? header.join(',') : '';
  const ranges: LanguageRange[] = [];
  for (const member of value.split(',')) {
    const parsed = parseMember(member);
    if (parsed !== undefined) ranges.push(parsed);
  }
  // Array.prototype.sort is stable: equal weights keep the order the client gave
  return ranges.sort((a, b) => b.q - a.q);
}

/** One `language-range [ weight ]` member, or `undefined` when it is malformed. */
function parseMember(member: string): LanguageRange | undefined {
  const semicolon = member.indexOf(';');
  const range = (semicolon === -1 ? member : member.slice(0, semicolon)).trim();
  if (range === '' || !RANGE.test(range)) return undefined;
  if (semicolon === -1) return { range: range.toLowerCase(), q: 1 };
  const weight = WEIGHT.exec(member.slice(semicolon + 1));
  if (weight === null) return undefined;
  return { range: range.toLowerCase(), q: Number(weight[1]) };
}

/**
 * Chooses one of the `supported` language tags for a request by RFC 4647 §3.4 *lookup*:
 * each language range, highest weight first, is compared with the supported tags (ignoring
 * case), then truncated one subtag at a time (`fr-CA` → `fr`, a singleton such as the `x`
 * of `x-private` removed with the subtag after it) until a tag matches. Ranges of weight `0`
 * exclude the tags they cover (`fr;q=0` excludes `fr` and `fr-CA`); `*` matches nothing by
 * itself: lookup then answers the default. When nothing matches, the answer is
 * `defaultLanguage`, unless it is excluded: then the first supported tag that is not
 * (and the default again when every tag is).
 *
 * `accept` is the `Accept-Language` field value, or ranges already parsed (for example from
 * OpenID Connect's `ui_locales`, in order of preference). The answer is spelled as in
 * `supported`.
 *
 * @example
 * ```ts
 * negotiateLanguage('fr-CA,fr;q=0.9,en;q=0.5', ['en', 'fr'], 'en'); // 'fr'
 * negotiateLanguage('de, *;q=0.1', ['en', 'fr'], 'en'); // 'en'
 * negotiateLanguage('en;q=0', ['en', 'fr'], 'en'); // 'fr'
 * negotiateLanguage(req.headers['accept-language'], ['en', 'fr'], 'en');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc4647#section-3.4 | RFC 4647 §3.4}
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-12.5.4 | RFC 9110 §12.5.4}
 */
export function negotiateLanguage(
  accept: string | readonly string[] | readonly LanguageRange[] | undefined,
  supported: readonly string[],
  defaultLanguage: string,
): string {
  const ranges = isRangeList(accept) ? accept : parseAcceptLanguage(accept);
  const tags = new Map<string, string>();
  let longest = 0;
  for (const tag of supported) {
    const lower = tag.toLowerCase();
    if (!tags.has(lower)) tags.set(lower, tag);
    longest = Math.max(longest, lower.length);
  }
  const excluded = ranges.filter((r) => r.q === 0).map((r) => r.range.toLowerCase());
  const covered = (lower: string) => excluded.some((range) => covers(range, lower));
  // each supported tag checked against the exclusions once, not once per range
  const usable = new Set<string>();
  for (const lower of tags.keys()) if (!covered(lower)) usable.add(lower);
  const allowed = (lower: string) => usable.has(lower);
  for (const { range, q } of ranges) {
    if (q === 0 || range === '*') continue;
    const found = lookup(range.toLowerCase(), tags, longest, allowed);
    if (found !== undefined) return found;
  }
  if (!covered(defaultLanguage.toLowerCase())) return defaultLanguage;
  for (const [lower, tag] of tags) if (usable.has(lower)) return tag;
  return defaultLanguage;
}

function isRangeList(
  accept: string | readonly string[] | readonly LanguageRange[] | undefined,
): accept is readonly LanguageRange[] {
  return Array.isArray(accept) && accept.length > 0 && typeof accept[0] === 'object';
}

/** Whether a range covers a tag as RFC 4647 §3.3.1 basic filtering says (`fr` covers `fr-ca`). */
function covers(range: string, tag: string): boolean {
  return range === '*' || tag === range || tag.startsWith(`${range}-`);
}

/** RFC 4647 §3.4: the range, then shorter and shorter prefixes of it, against the tags. */
function lookup(
  range: string,
  tags: ReadonlyMap<string, string>,
  longest: number,
  allowed: (lower: string) => boolean,
): string | undefined {
  let tag = range;
  if (tag.length > longest) {
    // no supported tag is that long: start at the longest prefix that could match
    const cut = tag.charAt(longest) === '-' ? longest : tag.lastIndexOf('-', longest);
    tag = cut <= 0 ? '' : tag.slice(0, cut);
  }
  while (tag !== '') {
    const found = tags.get(tag);
    if (found !== undefined && allowed(tag)) return found;
    let cut = tag.lastIndexOf('-');
    // a singleton (`x`, `u`) is never left at the end of a truncated range
    if (cut > 1 && tag.charAt(cut - 2) === '-') cut -= 2;
    tag = cut <= 0 ? '' : tag.slice(0, cut);
  }
  return undefined;
}

/**
 * Says which language a response is in: sets `Content-Language` and adds `Accept-Language`
 * to `Vary` (the answer depends on it, RFC 9110 §12.5.5).
 *
 * @example
 * ```ts
 * const language = negotiateLanguage(req.headers['accept-language'], ['en', 'fr'], 'en');
 * setContentLanguage(res, language);
 * send(res, 200, pages[language]);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-8.5 | RFC 9110 §8.5}
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-12.5.5 | RFC 9110 §12.5.5}
 */
export function setContentLanguage(res: ServerResponse, language: string): void {
  res.setHeader('Content-Language', language);
  appendVary(res, 'Accept-Language');
}
