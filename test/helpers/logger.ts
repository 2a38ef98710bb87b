import type { LogFields, Logger } from '../../src/diagnostics/index.js';

/** One line a {@link captureLogger} received, with its bindings merged in. */
export interface CapturedLine {
  level: 'error' | 'warn' | 'info' | 'debug';
  fields: LogFields;
  message: string;
}

/**
 * A logger that keeps every line (tests read `lines`, or `errors`: the `err` of each error
 * line), children included, and writes nothing.
 */
export function captureLogger(): Logger & {
  lines: CapturedLine[];
  errors: unknown[];
  /** Every line as one JSON text, for looking for a secret in all of it. */
  text(): string;
} {
  const lines: CapturedLine[] = [];
  const errors: unknown[] = [];
  const make = (bindings: LogFields): Logger => {
    const write = (level: CapturedLine['level']) => (fields: LogFields, message: string) => {
      const all = { ...bindings, ...fields };
      lines.push({ level, fields: all, message });
      if (level === 'error' && 'err' in all) errors.push(all.err);
    };
    return {
      error: write('error'),
      warn: write('warn'),
      info: write('info'),
      debug: write('debug'),
      child: (more) => make({ ...bindings, ...more }),
    };
  };
  const text = () =>
    JSON.stringify(
      lines.map(({ level, fields, message }) => ({
        level,
        message,
        fields: { ...fields, err: describeError(fields.err) },
      })),
    );
  return Object.assign(make({}), { lines, errors, text });
}

function describeError(error: unknown): unknown {
  if (error instanceof Error) return { message: error.message, stack: error.stack };
  return error;
}
