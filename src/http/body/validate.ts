import { unprocessable } from '../../core/errors/errors.js';
import type { FieldError } from '../../core/errors/http-error.js';
import { invalidOption } from '../../internal/options.js';
import type { StandardSchemaV1 } from './standard-schema.js';

/**
 * Throws an `ERR_INVALID_OPTION` `TypeError` unless `schema` implements Standard Schema
 * version 1 (an object or function with a `~standard` member holding `version: 1` and a
 * `validate` function). Schemas that are functions (arktype's) qualify.
 *
 * @example
 * ```ts
 * assertStandardSchema('createThing()', 'schema', options.schema); // TypeError unless a schema
 * ```
 */
export function assertStandardSchema(
  owner: string,
  name: string,
  schema: unknown,
): asserts schema is StandardSchemaV1 {
  const props =
    (typeof schema === 'object' || typeof schema === 'function') && schema !== null
      ? (schema as { '~standard'?: unknown })['~standard']
      : undefined;
  const valid =
    typeof props === 'object' &&
    props !== null &&
    (props as { version?: unknown }).version === 1 &&
    typeof (props as { validate?: unknown }).validate === 'function';
  if (!valid) {
    throw invalidOption(
      `${owner}: \`${name}\` must be a Standard Schema (zod 3.24+, valibot 1, arktype…), with \`~standard.version\` 1 and a \`~standard.validate\` function`,
    );
  }
}

/** Escapes a reference token of a JSON Pointer (RFC 6901 §3). */
function escapeToken(key: PropertyKey): string {
  const text = typeof key === 'symbol' ? (key.description ?? '') : String(key);
  return text.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** The JSON Pointer of an issue's path: `/items/0/name`, `''` for the root. */
function pointerOf(path: StandardSchemaV1.Issue['path']): string {
  let pointer = '';
  for (const segment of path ?? []) {
    const key = typeof segment === 'object' && segment !== null ? segment.key : segment;
    pointer += `/${escapeToken(key)}`;
  }
  return pointer;
}

/** An issue as a field error of a 422 problem. */
function toFieldError(issue: StandardSchemaV1.Issue): FieldError {
  return { field: pointerOf(issue.path), message: String(issue.message) };
}

async function run<S extends StandardSchemaV1>(
  schema: S,
  value: unknown,
): Promise<StandardSchemaV1.InferOutput<S>> {
  const result = await schema['~standard'].validate(value);
  if (result.issues) throw unprocessable(result.issues.map(toFieldError));
  return result.value as StandardSchemaV1.InferOutput<S>;
}

/**
 * Validates `value` with a Standard Schema (zod 3.24+, valibot 1, arktype…) and resolves to
 * the schema's output, typed. A value that fails rejects with a 422 problem
 * (`ERR_VALIDATION`) whose `errors` hold one `{ field, message }` per issue, `field` being a
 * JSON Pointer to the value at fault (`/items/0/name`; `''` for the value itself). Sync and
 * async schemas both work. A `schema` that is not a Standard Schema throws a `TypeError`
 * (`ERR_INVALID_OPTION`) at once.
 *
 * @example
 * ```ts
 * import { z } from 'zod';
 *
 * const Query = z.object({ page: z.coerce.number().int().min(1) });
 * const { page } = await validate(Query, Object.fromEntries(url.searchParams));
 * ```
 * @see {@link https://standardschema.dev | Standard Schema}
 * @see {@link https://www.rfc-editor.org/rfc/rfc6901 | RFC 6901 (JSON Pointer)}
 */
export function validate<S extends StandardSchemaV1>(
  schema: S,
  value: unknown,
): Promise<StandardSchemaV1.InferOutput<S>> {
  assertStandardSchema('validate()', 'schema', schema);
  return run(schema, value);
}
