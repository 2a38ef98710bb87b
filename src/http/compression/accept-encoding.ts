/**
 * A content coding {@link negotiateEncoding} can pick: `br` (Brotli), `gzip`, and `zstd`
 * where the running node:zlib has Zstandard (node 22.15 and later; not node 20).
 *
 * `deflate` is left out on purpose: every client that accepts `deflate` accepts `gzip`, which
 * is the same algorithm in a better-defined wrapper, and `deflate` has long been sent both
 * zlib-wrapped (as RFC 9110 defines it) and raw (as some old clients expect), a mismatch that
 * has broken decoders in the wild.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-8.4.1 | RFC 9110 §8.4.1}
 */
export type ContentCoding = 'br' | 'gzip' | 'zstd';

/** A qvalue as RFC 9110 §12.4.2 writes it: 0 to 1, at most three decimals. */
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;
/** A coding name (a token) or `*`. */
const CODING = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The weight of one `Accept-Encoding` member, or `undefined` when its `q` is malformed. */
function weightOf(params: readonly string[]): number | undefined {
  let weight = 1;
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq === -1 || param.slice(0, eq).trim().toLowerCase() !== 'q') continue; // not a weight
    const value = param.slice(eq + 1).trim();
    if (!QVALUE.test(value)) return undefined;
    weight = Number(value);
  }
  return weight;
}

/**
 * The weights an `Accept-Encoding` value gives, by lower-case coding name (`*` included).
 * A member with a malformed name or `q` is ignored; a coding listed twice keeps its lowest
 * weight (a refusal anywhere stands).
 */
function parseWeights(header: string): Map<string, number> {
  const weights = new Map<string, number>();
  for (const member of header.split(',')) {
    const [rawName = '', ...params] = member.split(';');
    const name = rawName.trim().toLowerCase();
    if (!CODING.test(name)) continue;
    const weight = weightOf(params);
    if (weight === undefined) continue;
    const earlier = weights.get(name);
    weights.set(name, earlier === undefined ? weight : Math.min(earlier, weight));
  }
  return weights;
}

/** The coding of `available` with the highest weight (the earlier on ties), if above 0. */
function bestOf(weights: Map<string, number>, available: readonly ContentCoding[]) {
  const star = weights.get('*');
  let best: ContentCoding | undefined;
  let bestWeight = 0;
  for (const coding of available) {
    const weight = weights.get(coding) ?? star ?? 0;
    if (weight > bestWeight) {
      best = coding;
      bestWeight = weight;
    }
  }
  return { best, bestWeight };
}

/** Answers of {@link negotiateEncoding}, by header and list of codings: few distinct values. */
const cache = new Map<string, ContentCoding | undefined>();
const CACHE_LIMIT = 256;
/** Longer values are negotiated afresh each time instead of filling the cache. */
const CACHED_LENGTH = 256;

/**
 * The content coding to answer with for an `Accept-Encoding` request header, or `undefined`
 * for none (identity). Among `available` (in order of preference on equal weights), the one
 * with the highest `q` above 0; a coding not listed takes the weight of `*`, else is refused.
 * No header, or an empty one, means identity. An `identity` listed with a higher weight than
 * every coding wins (identity). Members with a malformed `q` (`q=5`, `q=-1`, `q=0.0001`,
 * `q=abc`) are ignored, never thrown at.
 *
 * When every coding is refused and so is identity (`identity;q=0` or `*;q=0`), the answer is
 * identity all the same: RFC 9110 §12.5.3 lets a server send identity or a 406, and an
 * uncompressed answer serves the client better than an error page it asked not to get.
 *
 * @example
 * ```ts
 * negotiateEncoding('gzip;q=1, br;q=0.8', ['br', 'gzip']); // 'gzip'
 * negotiateEncoding('gzip, br', ['br', 'gzip']); // 'br' (tie: the first available)
 * negotiateEncoding('*;q=0, identity', ['br', 'gzip']); // undefined (identity)
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-12.5.3 | RFC 9110 §12.5.3}
 */
export function negotiateEncoding(
  header: string | undefined,
  available: readonly ContentCoding[],
): ContentCoding | undefined {
  if (header === undefined || header === '') return undefined;
  if (header.length > CACHED_LENGTH) return negotiate(header, available);
  const key = `${available.join(',')}|${header}`;
  if (cache.has(key)) return cache.get(key);
  const coding = negotiate(header, available);
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(key, coding);
  return coding;
}

function negotiate(header: string, available: readonly ContentCoding[]): ContentCoding | undefined {
  const weights = parseWeights(header);
  const { best, bestWeight } = bestOf(weights, available);
  if (best === undefined) return undefined;
  const identity = weights.get('identity');
  return identity !== undefined && identity > bestWeight ? undefined : best;
}
