import { promises as dns } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { Agent, buildConnector } from 'undici';
import type { Duration } from '../../core/duration.js';
import {
  assertKnownOptions,
  booleanOption,
  countOption,
  durationOption,
  functionOption,
  invalidOption,
} from '../../internal/options.js';
import { WebhookAddressError, type WebhookAddressReason } from '../errors.js';
import { type AddressClass, classifyAddress } from './ip-ranges.js';

export { type AddressClass, classifyAddress, isPublicAddress } from './ip-ranges.js';

/**
 * One answer of a host name lookup, as `dns.promises.lookup(host, { all: true })` gives it.
 *
 * @example
 * ```ts
 * const answer: ResolvedAddress = { address: '93.184.215.14', family: 4 };
 * ```
 */
export interface ResolvedAddress {
  /** The IP address literal. */
  address: string;
  /** Its family. */
  family: 4 | 6;
}

/** Options of {@link assertWebhookUrl} and {@link createGuardedAgent}. */
export interface AddressGuardOptions {
  /**
   * Accept `http:` URLs as well as `https:`. For local development only: webhook bodies and
   * signatures then travel in clear text.
   * @defaultValue `false`
   */
  allowHttp?: boolean;
  /**
   * Accept every address, public or not (loopback, private, link-local…). For local
   * development and tests only: it turns the server-side request forgery guard off.
   * @defaultValue `false`
   */
  allowPrivate?: boolean;
  /**
   * Resolves a host name to all of its addresses. A rejection, or an empty answer, makes the
   * host `unresolvable`. Inject a stub in tests; every answer is checked either way.
   * @defaultValue `(host) => dns.promises.lookup(host, { all: true, verbatim: true })`
   */
  lookup?: (hostname: string) => Promise<readonly ResolvedAddress[]>;
}

/** Options of {@link createGuardedAgent}: the guard's, and a few of undici's `Agent`. */
export interface GuardedAgentOptions extends AddressGuardOptions {
  /**
   * Most connections open at once to one origin.
   * @defaultValue `10`
   */
  connections?: number;
  /**
   * How long an idle connection is kept open for the next delivery, in milliseconds (a
   * server's `Keep-Alive` hint may shorten it).
   * @defaultValue `4_000` (4 seconds)
   */
  keepAliveTimeout?: Duration;
  /**
   * How long resolving the host and completing the TCP (and TLS) handshake may take, in
   * milliseconds.
   * @defaultValue `10_000` (10 seconds)
   */
  connectTimeout?: Duration;
}

interface Guard {
  allowHttp: boolean;
  allowPrivate: boolean;
  lookup: (hostname: string) => Promise<readonly ResolvedAddress[]>;
}

const GUARD_OPTIONS = [
  'allowHttp',
  'allowPrivate',
  'lookup',
] as const satisfies readonly (keyof AddressGuardOptions)[];
const AGENT_OPTIONS = [
  ...GUARD_OPTIONS,
  'connections',
  'keepAliveTimeout',
  'connectTimeout',
] as const satisfies readonly (keyof GuardedAgentOptions)[];

const systemLookup = async (hostname: string): Promise<readonly ResolvedAddress[]> =>
  (await dns.lookup(hostname, { all: true, verbatim: true })) as ResolvedAddress[];

function toGuard(owner: string, options: AddressGuardOptions): Guard {
  return {
    allowHttp: booleanOption(owner, 'allowHttp', options.allowHttp, false),
    allowPrivate: booleanOption(owner, 'allowPrivate', options.allowPrivate, false),
    lookup: functionOption(owner, 'lookup', options.lookup) ?? systemLookup,
  };
}

function refuse(reason: WebhookAddressReason, message: string, cause?: unknown) {
  const error = new WebhookAddressError(reason, message);
  if (cause !== undefined) {
    Object.defineProperty(error, 'cause', { value: cause, writable: true, configurable: true });
  }
  return error;
}

const article = (kind: AddressClass) => (/^[aeiou]/.test(kind) ? 'an' : 'a');

/** Refuses a scheme the guard does not allow. */
function checkScheme(protocol: string, guard: Guard): void {
  if (protocol === 'https:') return;
  if (protocol !== 'http:') throw refuse('invalid-url', 'A webhook URL must be https:.');
  if (!guard.allowHttp) {
    throw refuse('insecure-scheme', 'A webhook URL must be https: (http: is not allowed).');
  }
}

/** Refuses an IP literal that is not public (unless `allowPrivate`). */
function checkAddress(host: string, address: string, guard: Guard): void {
  if (isIP(address) === 0) {
    throw refuse('unresolvable', `The webhook host ${host} resolves to something not an IP.`);
  }
  if (guard.allowPrivate) return;
  const kind = classifyAddress(address);
  if (kind === 'public') return;
  throw refuse(
    'private',
    host === address
      ? `The webhook address ${host} is ${article(kind)} ${kind} address.`
      : `The webhook host ${host} resolves to ${article(kind)} ${kind} address.`,
  );
}

/**
 * The checked addresses of `host` (a host name or an IP literal without brackets): refuses
 * the host when it does not resolve, or when ANY of its addresses is not allowed.
 */
async function checkHost(host: string, guard: Guard): Promise<readonly ResolvedAddress[]> {
  const family = isIP(host);
  if (family !== 0) {
    checkAddress(host, host, guard);
    return [{ address: host, family: family as 4 | 6 }];
  }
  let answers: readonly ResolvedAddress[];
  try {
    answers = await guard.lookup(host);
  } catch (cause) {
    throw refuse('unresolvable', `The webhook host ${host} does not resolve.`, cause);
  }
  if (!Array.isArray(answers) || answers.length === 0) {
    throw refuse('unresolvable', `The webhook host ${host} does not resolve.`);
  }
  for (const answer of answers) checkAddress(host, answer?.address, guard);
  return answers.map(({ address }) => ({ address, family: isIP(address) as 4 | 6 }));
}

/** `url.hostname` without the brackets of an IPv6 literal. */
const hostOf = (hostname: string) =>
  hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;

/**
 * Checks a webhook destination when it is registered, and returns it parsed. The URL must be
 * absolute, `https:` (or `http:` with `allowHttp`), and carry no user name or password; its
 * host must resolve, and to public addresses only: ANY loopback, private, link-local,
 * unique-local, multicast, unspecified or reserved answer refuses it (see
 * `classifyAddress`), unless `allowPrivate`. The WHATWG URL parser normalizes other
 * IPv4 spellings first (`http://0x7f.1/`, `http://2130706433/`, `http://0177.0.0.1/` are
 * all `127.0.0.1`).
 *
 * A name may resolve elsewhere later (DNS rebinding): deliver through
 * {@link createGuardedAgent}, which checks again the address it connects to.
 *
 * @throws WebhookAddressError with `reason` `invalid-url`, `insecure-scheme`, `private` or
 * `unresolvable`. Its message names the host and the kind of address, never the path, the
 * query or a resolved address.
 * @example
 * ```ts
 * try {
 *   const url = await assertWebhookUrl(body.url);
 *   await subscriptions.insert({ url: url.href, events: body.events });
 * } catch (err) {
 *   if (err instanceof WebhookAddressError) throw unprocessable([{ field: 'url', message: err.message }]);
 *   throw err;
 * }
 * ```
 * @see {@link https://cheatsheetseries.owasp.org/cheatsheets/Server_Side_Request_Forgery_Prevention_Cheat_Sheet.html | OWASP Server Side Request Forgery Prevention Cheat Sheet}
 */
export async function assertWebhookUrl(
  url: string | URL,
  options: AddressGuardOptions = {},
): Promise<URL> {
  assertKnownOptions('assertWebhookUrl()', options, GUARD_OPTIONS);
  const guard = toGuard('assertWebhookUrl()', options);
  if (typeof url !== 'string' && !(url instanceof URL)) {
    throw invalidOption('assertWebhookUrl(): `url` must be a string or a URL');
  }
  let parsed: URL;
  try {
    parsed = new URL(url instanceof URL ? url.href : url);
  } catch {
    throw refuse('invalid-url', 'A webhook URL must be an absolute URL.');
  }
  checkScheme(parsed.protocol, guard);
  if (parsed.username !== '' || parsed.password !== '') {
    throw refuse('invalid-url', 'A webhook URL must not carry a user name or password.');
  }
  await checkHost(hostOf(parsed.hostname), guard);
  return parsed;
}

/**
 * The `lookup` handed to `net.connect`/`tls.connect`: resolves with the guard's resolver,
 * refuses the host if any answer is not allowed, and gives node the checked addresses, in
 * both of node's callback forms (`all: true` is what `net` asks for with `autoSelectFamily`).
 */
function guardedLookup(guard: Guard): LookupFunction {
  return (hostname, options, callback) => {
    const wanted = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
    checkHost(hostname, guard).then(
      (answers) => {
        const usable =
          wanted === 4 || wanted === 6 ? answers.filter((a) => a.family === wanted) : answers;
        const first = usable[0];
        if (first === undefined) {
          const error = refuse(
            'unresolvable',
            `The webhook host ${hostname} has no IPv${wanted} address.`,
          );
          process.nextTick(callback, error, '', 0);
        } else if (options.all === true) {
          process.nextTick(
            callback,
            null,
            usable.map((a) => ({ ...a })),
          );
        } else {
          process.nextTick(callback, null, first.address, first.family);
        }
      },
      (error: unknown) => process.nextTick(callback, error as Error, '', 0),
    );
  };
}

/**
 * {@link createGuardedAgent}'s agent, made with the `undici` module given (the webhook sender
 * loads undici on its first delivery, not when portico is imported).
 *
 * @internal
 */
export function guardedAgentWith(
  undici: Pick<typeof import('undici'), 'Agent' | 'buildConnector'>,
  options: GuardedAgentOptions = {},
  // the TLS trust of the connections (`ca`: tests' own CA); the system's roots otherwise
  tls: { readonly ca?: string | Buffer | readonly (string | Buffer)[] } = {},
): Agent {
  const owner = 'createGuardedAgent()'; // the public name of this agent
  assertKnownOptions(owner, options, AGENT_OPTIONS);
  const guard = toGuard(owner, options);
  const connections = countOption(owner, 'connections', options.connections, 10);
  const keepAliveTimeout = durationOption(
    owner,
    'keepAliveTimeout',
    options.keepAliveTimeout,
    4_000,
    { min: 1 },
  );
  const timeout = durationOption(owner, 'connectTimeout', options.connectTimeout, 10_000, {
    min: 1,
  });
  const connectChecked = undici.buildConnector({
    timeout,
    lookup: guardedLookup(guard),
    ...(tls.ca !== undefined && { ca: tls.ca as string | Buffer | (string | Buffer)[] }),
  });
  const connect: buildConnector.connector = (target, callback) => {
    try {
      checkScheme(target.protocol, guard);
      // net.connect calls no lookup for an IP literal: check it here.
      const host = hostOf(target.hostname);
      if (isIP(host) !== 0) checkAddress(host, host, guard);
    } catch (error) {
      queueMicrotask(() => callback(error as Error, null));
      return;
    }
    connectChecked(target, callback);
  };
  return new undici.Agent({ connect, connections, keepAliveTimeout });
}
