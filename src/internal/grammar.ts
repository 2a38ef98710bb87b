// The grammar portico checks values against, in one place: the HTTP rules (RFC 9110 §5.5,
// §5.6), the core rules of ABNF (RFC 5234 Appendix B.1) and the control characters of
// Unicode. Write a pattern here, named for the rule it is, rather than again beside its use.
// biome-ignore-all lint/suspicious/noControlCharactersInRegex: control characters are what these rules are about

/** An RFC 9110 token (§5.6.2): a header name, an auth scheme, a parameter name, a method. */
export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Whether `value` is an RFC 9110 token. */
export function isToken(value: unknown): value is string {
  return typeof value === 'string' && TOKEN.test(value);
}

/**
 * The characters of an RFC 9110 field value (§5.5: `field-content`, SP and HTAB, with
 * `obs-text`): tab, space, visible ASCII and the octets 0x80–0xFF, nothing else (no control
 * character, no DEL, nothing node cannot write in a header: it throws `ERR_INVALID_CHAR`).
 */
export const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Whether `value` is a string node can send as a header value (RFC 9110 §5.5). */
export function isFieldValue(value: unknown): value is string {
  return typeof value === 'string' && FIELD_VALUE.test(value);
}

/**
 * What a quoted-string (RFC 9110 §5.6.4) may carry once escaped: tab, space, visible ASCII
 * and the octets 0x80–0xFF, nothing else (no control character, no DEL). The same characters
 * as {@link FIELD_VALUE}: `qdtext` and `quoted-pair` together are exactly the field's.
 */
export const QUOTABLE = FIELD_VALUE;

/**
 * True when a value would break out of its line (CR, LF or NUL): a header (the characters
 * RFC 9110 §5.5 calls invalid and dangerous in a field value), an SSE field.
 */
export function hasLineBreak(value: string): boolean {
  return /[\r\n\0]/.test(value);
}

/**
 * A line ending in a text: CRLF, CR or LF, as a `text/event-stream` reader splits lines
 * (HTML, Server-sent events: `end-of-line`).
 */
export const LINE_ENDING = /\r\n|\r|\n/;

/** An RFC 5234 CTL (Appendix B.1: `%x00-1F / %x7F`): a C0 control character or DEL. */
export const CTL = /[\x00-\x1f\x7f]/;

/**
 * A control character of Unicode (general category Cc): a {@link CTL} or a C1 control
 * (U+0080–U+009F). The PRECIS classes that RFC 8265's user names and passwords build on
 * disallow them (RFC 8264 §4.2, §4.3); RFC 7617 §2 forbids CTLs in Basic credentials.
 */
export const CONTROL = /[\x00-\x1f\x7f-\x9f]/;

/**
 * Whether `value` is a name of 1 to `max` UTF-16 code units with no {@link CTL}: an event
 * name, a revocation id, an opaque label a caller gives.
 */
export function isCtlFreeName(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= max && !CTL.test(value);
}

/** One or more RFC 5234 VCHARs (Appendix B.1: `%x21-7E`, visible ASCII): a key, an id. */
export const VCHARS = /^[\x21-\x7e]+$/;

/**
 * An OAuth `error` code as RFC 6749 §5.2 allows it (`%x20-21 / %x23-5B / %x5D-7E`), at most 64
 * characters: what may be repeated back from a provider's answer.
 */
export const OAUTH_ERROR_CODE = /^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,64}$/;
