/**
 * NestJS (11 and 12) adapter: {@link PorticoModule} with a guard that runs portico's
 * `authenticate()` ({@link PorticoAuthGuard}, the principal at `req.user` as passport puts it),
 * {@link Scopes} and {@link Roles}, and an exception filter answering every error as Problem
 * Details ({@link PorticoExceptionFilter}, Nest's `HttpException` included), on Nest's Express
 * and Fastify platforms.
 *
 * @module portico/nest
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type ArgumentsHost,
  type CanActivate,
  Catch,
  type DynamicModule,
  type ExceptionFilter,
  type ExecutionContext,
  Inject,
  Injectable,
  Module,
  SetMetadata,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  type AuthenticateOptions,
  authenticate,
  requireRole,
  requireScopes,
} from '../auth/authenticate.js';
import type { Authenticator } from '../auth/authenticator.js';
import { compose, type Middleware } from '../core/compose.js';
import { notFound } from '../core/errors/errors.js';
import { getPrincipal } from '../core/principal.js';
import { type ErrorHandlerOptions, sendError } from '../core/problem.js';
import { invalidOption } from '../internal/options.js';

/** The metadata keys of {@link Scopes} and {@link Roles}. */
const SCOPES_KEY = 'portico:scopes';
const ROLES_KEY = 'portico:roles';

/**
 * The injection token of the options given to {@link PorticoModule.forRoot}.
 *
 * @example
 * ```ts
 * const options = app.get<PorticoNestOptions>(PORTICO_OPTIONS);
 * ```
 */
export const PORTICO_OPTIONS = Symbol('portico.nest.options');

/**
 * Options of {@link PorticoModule.forRoot}.
 *
 * @example
 * ```ts
 * PorticoModule.forRoot({ authenticators: [apiKeyAuth({ store })], guard: createCredentialGuard() });
 * ```
 */
export interface PorticoNestOptions extends ErrorHandlerOptions, AuthenticateOptions {
  /** The authenticators `PorticoAuthGuard` tries, in order (as `authenticate()` does). */
  authenticators: readonly Authenticator[];
}

/**
 * The scopes a route asks of its principal (all of them), checked by {@link PorticoAuthGuard}:
 * a token without one is a 403 with `WWW-Authenticate: Bearer error="insufficient_scope"`.
 *
 * @example
 * ```ts
 * @Get('messages') @Scopes('read:messages') list() { … }
 * ```
 */
export const Scopes = (...scopes: string[]) => SetMetadata(SCOPES_KEY, scopes);

/**
 * The roles that may use a route (any one of them), checked by {@link PorticoAuthGuard}: a 403
 * problem for a principal with none of them.
 *
 * @example
 * ```ts
 * @Delete(':id') @Roles('admin') remove() { … }
 * ```
 */
export const Roles = (...roles: string[]) => SetMetadata(ROLES_KEY, roles);

/** The node request and response under a Nest HTTP context (Express's, or Fastify's `raw`). */
function nodeOf(host: ArgumentsHost): {
  request: { user?: unknown; raw?: IncomingMessage } & object;
  req: IncomingMessage;
  res: ServerResponse;
  reply: { hijack?: () => unknown; raw?: ServerResponse } & object;
} {
  const http = host.switchToHttp();
  const request = http.getRequest();
  const reply = http.getResponse();
  return {
    request,
    reply,
    req: (request.raw ?? request) as IncomingMessage,
    res: (reply.raw ?? reply) as ServerResponse,
  };
}

/**
 * Nest's guard running portico's `authenticate()` with the module's authenticators, then the
 * route's {@link Scopes} and {@link Roles}. The principal is put at `req.user` (passport's
 * place, where `@Req()`-based decorators look) and found by `getPrincipal(req)`. A refusal is
 * thrown as portico's error (401 with its challenges, 403, 429), which
 * {@link PorticoExceptionFilter} answers as a problem.
 *
 * @example
 * ```ts
 * @Controller('api') @UseGuards(PorticoAuthGuard)
 * class MeController { @Get('me') me(@Req() req: { user: Principal }) { return { sub: req.user.sub }; } }
 * ```
 */
export class PorticoAuthGuard implements CanActivate {
  readonly #authenticate: Middleware;
  readonly #reflector: Reflector;
  readonly #checks = new WeakMap<object, Middleware>();

  constructor(options: PorticoNestOptions, reflector: Reflector) {
    const { authenticators, logger: _logger, ...rest } = options;
    this.#authenticate = authenticate(authenticators, rest);
    this.#reflector = reflector;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') {
      throw new Error('PorticoAuthGuard guards HTTP routes only');
    }
    const { request, req, res } = nodeOf(context);
    let passed = false;
    await this.#checksOf(context)(req, res, async () => {
      passed = true;
    });
    if (passed) request.user = getPrincipal(req);
    return passed;
  }

  /** authenticate(), then the route's scopes and roles: one composed chain per route. */
  #checksOf(context: ExecutionContext): Middleware {
    const handler = context.getHandler();
    let checks = this.#checks.get(handler);
    if (checks === undefined) {
      const targets = [handler, context.getClass()];
      const scopes = this.#reflector.getAllAndOverride<string[] | undefined>(SCOPES_KEY, targets);
      const roles = this.#reflector.getAllAndOverride<string[] | undefined>(ROLES_KEY, targets);
      checks = compose([
        this.#authenticate,
        ...(scopes?.length ? [requireScopes(scopes)] : []),
        ...(roles?.length ? [requireRole(roles)] : []),
      ]);
      this.#checks.set(handler, checks);
    }
    return checks;
  }
}
Injectable()(PorticoAuthGuard);
Inject(PORTICO_OPTIONS)(PorticoAuthGuard, undefined, 0);
Inject(Reflector)(PorticoAuthGuard, undefined, 1);

/**
 * Nest's exception filter answering every error as Problem Details: portico's errors as they
 * are, Nest's `HttpException` (and any error with a `status`) by its status and message,
 * anything else as a 500 that reveals nothing (logged to the module's `logger`), keeping the
 * headers already set (request id, CORS, rate limits). Register it globally with
 * `app.useGlobalFilters(app.get(PorticoExceptionFilter))`, or `APP_FILTER`.
 *
 * @example
 * ```ts
 * const app = await NestFactory.create(AppModule);
 * app.useGlobalFilters(app.get(PorticoExceptionFilter));
 * ```
 */
export class PorticoExceptionFilter implements ExceptionFilter {
  readonly #options: ErrorHandlerOptions;

  constructor(options: PorticoNestOptions) {
    this.#options = { logger: options.logger };
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    const { req, res, reply } = nodeOf(host);
    // Fastify: the answer is written on the raw response, which Fastify is told not to send
    if (reply !== res && typeof reply.hijack === 'function') reply.hijack();
    sendError(req, res, fromNest(exception, req), this.#options);
  }
}
Catch()(PorticoExceptionFilter);
Injectable()(PorticoExceptionFilter);
Inject(PORTICO_OPTIONS)(PorticoExceptionFilter, undefined, 0);

/**
 * A Nest `HttpException` as the `http-errors`-shaped error portico reads (`status`,
 * `expose`, `message`): its status, and its message for a 4xx (a validation pipe's list of
 * messages joined).
 */
function fromNest(exception: unknown, req: IncomingMessage): unknown {
  const nest = exception as { getStatus?: unknown; getResponse?: unknown } | null;
  if (typeof nest?.getStatus !== 'function' || typeof nest.getResponse !== 'function') {
    return exception;
  }
  const status = (nest.getStatus as () => number).call(nest);
  const body = (nest.getResponse as () => unknown).call(nest);
  const said = typeof body === 'string' ? body : (body as { message?: unknown } | null)?.message;
  const message = Array.isArray(said) ? said.join('; ') : typeof said === 'string' ? said : '';
  // Nest's router says `Cannot GET /path?query`: the query may hold a credential (`api_key`)
  if (status === 404 && message.startsWith(`Cannot ${req.method} `)) {
    return notFound('Nothing is served at this path.');
  }
  return Object.assign(new Error(message), { status, expose: status < 500, cause: exception });
}

function validated(options: PorticoNestOptions): PorticoNestOptions {
  if (options === null || typeof options !== 'object') {
    throw invalidOption('PorticoModule.forRoot(): options must be an object');
  }
  if (!Array.isArray(options.authenticators) || options.authenticators.length === 0) {
    throw invalidOption('PorticoModule.forRoot(): `authenticators` must list at least one');
  }
  return options;
}

/**
 * The Nest module of portico: `forRoot()` gives the whole application (a global module)
 * {@link PorticoAuthGuard} and {@link PorticoExceptionFilter}, built from its options.
 *
 * @example
 * ```ts
 * const keys = new MemoryApiKeyStore();
 * class AppModule {}
 * Module({ imports: [PorticoModule.forRoot({ authenticators: [apiKeyAuth({ store: keys })] })], controllers: [MeController] })(AppModule);
 * ```
 */
// biome-ignore lint/complexity/noStaticOnlyClass: a Nest module is a class (`forRoot()` on it)
export class PorticoModule {
  static forRoot(options: PorticoNestOptions): DynamicModule {
    return {
      module: PorticoModule,
      global: true,
      providers: [
        { provide: PORTICO_OPTIONS, useValue: validated(options) },
        PorticoAuthGuard,
        PorticoExceptionFilter,
      ],
      exports: [PORTICO_OPTIONS, PorticoAuthGuard, PorticoExceptionFilter],
    };
  }
}
Module({})(PorticoModule);
