// The HTTP grammar portico checks values against (RFC 9110 §5.6), in one place.

/** An RFC 9110 token (§5.6.2): a header name, an auth scheme, a parameter name, a method. */
export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Whether `value` is an RFC 9110 token. */
export function isToken(value: unknown): value is string {
  return typeof value === 'string' && TOKEN.test(value);
}

/**
 * What a quoted-string (RFC 9110 §5.6.4) may carry once escaped: tab, space, visible ASCII
 * and the octets 0x80–0xFF, nothing else (no control character, no DEL).
 */
export const QUOTABLE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** True when a value would break out of its line (CR, LF or NUL): a header, an SSE field. */
export function hasLineBreak(value: string): boolean {
  return /[\r\n\0]/.test(value);
}
