/**
 * The payload of a compact JWT, read without verifying anything: only to choose how to answer
 * or check a token, never to accept it. `undefined` for what is not a JSON object there.
 */
export function peekPayload(token: string): Record<string, unknown> | undefined {
  const first = token.indexOf('.');
  const second = token.indexOf('.', first + 1);
  if (first === -1 || second === -1) return undefined;
  try {
    const payload: unknown = JSON.parse(
      Buffer.from(token.slice(first + 1, second), 'base64url').toString('utf8'),
    );
    return typeof payload === 'object' && payload !== null && !Array.isArray(payload)
      ? (payload as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The `cnf` (confirmation) claim of a token's unverified payload, when it is an object. */
export function peekConfirmation(token: string): Record<string, unknown> | undefined {
  const cnf = peekPayload(token)?.cnf;
  return typeof cnf === 'object' && cnf !== null && !Array.isArray(cnf)
    ? (cnf as Record<string, unknown>)
    : undefined;
}
