import type { ServerResponse } from 'node:http';

/** Adds `field` to the response's `Vary` header unless it is already listed (or `*`). */
export function appendVary(res: ServerResponse, field: string): void {
  const current = res.getHeader('Vary');
  if (current === undefined) {
    res.setHeader('Vary', field);
    return;
  }
  const value = Array.isArray(current) ? current.join(', ') : String(current);
  const lower = field.toLowerCase();
  for (const part of value.split(',')) {
    const name = part.trim().toLowerCase();
    if (name === '*' || name === lower) return;
  }
  res.setHeader('Vary', value ? `${value}, ${field}` : field);
}

/** True when a header value would break out of its line (CR, LF or NUL). */
export function hasControlBreak(value: string): boolean {
  return /[\r\n\0]/.test(value);
}
