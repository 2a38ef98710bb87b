/** Request headers of one server: the comparison's, then the server's, `$NAME` expanded. */

const VARIABLE = /\$([A-Z][A-Z0-9_]*)/g;

/**
 * Replaces `$NAME` in each value with `variables[NAME]` (from the comparison's `setup`); a
 * name without a value is an error, so a typo never sends a literal `$NAME` as a credential.
 */
export function expandHeaders(
  headers: Readonly<Record<string, string>>,
  variables: Readonly<Record<string, string>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    out[name] = value.replace(VARIABLE, (_match, variable: string) => {
      const found = variables[variable];
      if (found === undefined) {
        throw new Error(`request header ${name}: no variable ${variable} (see Comparison.setup)`);
      }
      return found;
    });
  }
  return out;
}

/** The headers a server is sent: the comparison's, overridden by `extra`, expanded. */
export function mergeHeaders(
  base: Readonly<Record<string, string>>,
  extra: Readonly<Record<string, string>> | undefined,
  variables: Readonly<Record<string, string>>,
): Record<string, string> {
  return expandHeaders({ ...base, ...extra }, variables);
}
