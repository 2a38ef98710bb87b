/**
 * The Standard Schema interface (https://standardschema.dev), version 1: what zod (3.24+),
 * valibot (1.x), arktype and others implement. Types only, so portico depends on none of them.
 *
 * @example
 * ```ts
 * import { z } from 'zod';
 * const Message = z.object({ text: z.string() });
 * const schema: StandardSchemaV1<unknown, { text: string }> = Message;
 * ```
 * @see {@link https://standardschema.dev | Standard Schema}
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The Standard Schema properties. */
  readonly '~standard': StandardSchemaV1.Props<Input, Output>;
}

/** The types that go with {@link StandardSchemaV1}, as the specification names them. */
export declare namespace StandardSchemaV1 {
  /** The properties of a Standard Schema. */
  export interface Props<Input = unknown, Output = Input> {
    /** The version of the interface: `1`. */
    readonly version: 1;
    /** The library that made the schema (`'zod'`, `'valibot'`, `'arktype'`). */
    readonly vendor: string;
    /** Validates a value: its output, or the issues found. */
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
    /** Phantom types of the input and output, for inference only. */
    readonly types?: Types<Input, Output> | undefined;
  }

  /** What `validate` returns. */
  export type Result<Output> = SuccessResult<Output> | FailureResult;

  /** A value that passed. */
  export interface SuccessResult<Output> {
    /** The validated (possibly transformed) value. */
    readonly value: Output;
    /** Absent on success. */
    readonly issues?: undefined;
  }

  /** A value that failed. */
  export interface FailureResult {
    /** What is wrong with it. */
    readonly issues: ReadonlyArray<Issue>;
  }

  /** One thing wrong with a value. */
  export interface Issue {
    /** What is wrong, in words. */
    readonly message: string;
    /** Where, from the root of the value. */
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
  }

  /** A step of an issue's path. */
  export interface PathSegment {
    /** The key of the step. */
    readonly key: PropertyKey;
  }

  /** The input and output types of a schema. */
  export interface Types<Input = unknown, Output = Input> {
    /** The type the schema takes. */
    readonly input: Input;
    /** The type the schema gives. */
    readonly output: Output;
  }

  /** The input type of a schema. */
  export type InferInput<Schema extends StandardSchemaV1> = NonNullable<
    Schema['~standard']['types']
  >['input'];

  /** The output type of a schema: what `validate()` and `readJson(req, { schema })` return. */
  export type InferOutput<Schema extends StandardSchemaV1> = NonNullable<
    Schema['~standard']['types']
  >['output'];
}
