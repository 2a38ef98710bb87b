import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { DetailedPeerCertificate, PeerCertificate } from 'node:tls';
import type { Principal } from '../core/principal.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import type { Authenticator } from './authenticator.js';
import { getClientCertificate } from './certificate.js';
import { expiredCredentials, invalidCredentials } from './errors.js';

/**
 * Options of {@link mtlsAuth}.
 *
 * @example
 * ```ts
 * const options: MtlsOptions = {
 *   subjectAltNames: ['URI:spiffe://example.org/ns/prod/sa/billing'],
 *   map: (cert) => ({ sub: 'billing', scopes: ['write:invoices'], method: 'mtls' }),
 * };
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc5280#section-4.2.1.6 | RFC 5280 §4.2.1.6} (subject alternative names)
 */
export interface MtlsOptions {
  /**
   * SHA-256 fingerprints of the DER certificates allowed to authenticate, in hex with or
   * without colons, any case (`openssl x509 -noout -fingerprint -sha256`). When given, a
   * verified certificate not listed is a 401. Compared in constant time.
   * @defaultValue every certificate the CA verifies
   */
  fingerprints?: readonly string[];
  /**
   * Subject alternative names allowed to authenticate, written as node reports them:
   * `DNS:svc.internal`, `URI:spiffe://example.org/ns/prod/sa/billing`, `email:ops@example.com`,
   * `IP Address:10.0.0.7` (or `IP:10.0.0.7`). A verified certificate needs at least one of
   * them, matched exactly (DNS names without regard to case), or it is a 401.
   * @defaultValue every certificate the CA verifies
   */
  subjectAltNames?: readonly string[];
  /**
   * Maps a verified (and allowlisted) certificate to the principal; `undefined` refuses it
   * with a 401.
   * @defaultValue `sub` and `name` from the subject CN, `scopes: []`, `method: 'mtls'`; a
   * certificate without exactly one CN is a 401
   */
  map?: (
    certificate: DetailedPeerCertificate,
    req: IncomingMessage,
  ) => Principal | undefined | Promise<Principal | undefined>;
}

const MTLS_OPTIONS = [
  'fingerprints',
  'subjectAltNames',
  'map',
] as const satisfies readonly (keyof MtlsOptions)[];

/** Short, generic reasons for the verification errors worth telling apart. */
const UNTRUSTED_CA = 'The client certificate is not trusted: it was not issued by a trusted CA.';
const REASONS: Readonly<Record<string, string>> = {
  CERT_NOT_YET_VALID: 'The client certificate is not trusted: it is not valid yet.',
  CERT_REVOKED: 'The client certificate is not trusted: it has been revoked.',
  UNABLE_TO_GET_ISSUER_CERT: UNTRUSTED_CA,
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: UNTRUSTED_CA,
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: UNTRUSTED_CA,
  SELF_SIGNED_CERT_IN_CHAIN: UNTRUSTED_CA,
  DEPTH_ZERO_SELF_SIGNED_CERT: UNTRUSTED_CA,
  CERT_SIGNATURE_FAILURE: UNTRUSTED_CA,
};

const SAN_TYPES: Readonly<Record<string, string>> = {
  dns: 'DNS',
  uri: 'URI',
  email: 'email',
  ip: 'IP Address',
  'ip address': 'IP Address',
};

/** `type:value` with the type spelt as node spells it and DNS names lower-cased. */
function normalizeSan(entry: string): string | undefined {
  const colon = entry.indexOf(':');
  if (colon < 1) return undefined;
  const name = entry.slice(0, colon).trim().toLowerCase();
  const type = Object.hasOwn(SAN_TYPES, name) ? SAN_TYPES[name] : undefined;
  const value = entry.slice(colon + 1);
  if (type === undefined || value === '') return undefined;
  return `${type}:${type === 'DNS' ? value.toLowerCase() : value}`;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: a JSON string excludes them
const JSON_STRING = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/;

/**
 * Splits node's `subjectaltname` (`DNS:a, URI:"b, c"`): entries are separated by `, `, and
 * a value holding special characters is a JSON string (as node's own `tls` module reads it).
 */
function splitSubjectAltNames(altNames: string): string[] {
  const result: string[] = [];
  let token = '';
  let offset = 0;
  // Each turn consumes at least one character, so the loop ends.
  while (offset < altNames.length) {
    const sep = altNames.indexOf(', ', offset);
    const quote = altNames.indexOf('"', offset);
    if (quote !== -1 && (sep === -1 || quote < sep)) {
      token += altNames.slice(offset, quote);
      const match = JSON_STRING.exec(altNames.slice(quote));
      if (match === null) return []; // malformed: match nothing
      token += JSON.parse(match[0]) as string;
      offset = quote + match[0].length;
    } else if (sep !== -1) {
      result.push(token + altNames.slice(offset, sep));
      token = '';
      offset = sep + 2;
    } else {
      token += altNames.slice(offset);
      offset = altNames.length;
    }
  }
  if (token !== '') result.push(token);
  return result;
}

function parseFingerprint(value: unknown, index: number): Buffer {
  const hex = typeof value === 'string' ? value.replace(/:/g, '').toLowerCase() : '';
  if (!/^[0-9a-f]{64}$/.test(hex)) {
    throw invalidOption(
      `mtlsAuth(): fingerprints[${index}] must be a SHA-256 fingerprint: 64 hex digits, colons allowed`,
    );
  }
  return Buffer.from(hex, 'hex');
}

/** Whether `digest` is one of `allowed`, looking at every entry (constant time per entry). */
function includesDigest(allowed: readonly Buffer[], digest: Buffer): boolean {
  let found = false;
  for (const candidate of allowed) found = timingSafeEqual(candidate, digest) || found;
  return found;
}

function defaultMap(certificate: DetailedPeerCertificate): Principal | undefined {
  const cn: unknown = certificate.subject?.CN;
  if (typeof cn !== 'string' || cn === '') return undefined;
  return { sub: cn, name: cn, scopes: [], method: 'mtls', certificate: leafOf(certificate) };
}

/** The certificate without its issuer chain (which is circular for a self-signed root). */
function leafOf(certificate: DetailedPeerCertificate): PeerCertificate {
  const { issuerCertificate: _chain, ...leaf } = certificate;
  return leaf;
}

/**
 * Authenticates requests by the client certificate of their TLS connection (mutual TLS):
 * a certificate that verified against the server's `ca` authenticates, mapped to a
 * principal by its subject CN unless `map` says otherwise, and optionally only if its
 * SHA-256 fingerprint or one of its subject alternative names is allowlisted. A request
 * over plain HTTP or without a certificate is not this mechanism's (`undefined`); a
 * certificate that did not verify (another CA, expired) is a 401 problem saying so in
 * general terms, never echoing the certificate.
 *
 * The server must ask for certificates without failing the handshake, so that a bad or
 * missing one gets an HTTP answer: build its options with `tlsServerOptions({ cert, key, ca })`
 * (from `portico/http`), which sets `requestCert: true, rejectUnauthorized: false`.
 *
 * @example
 * ```ts
 * const server = https.createServer(
 *   tlsServerOptions({ cert: readFileSync('server.pem'), key: readFileSync('server.key'), ca: readFileSync('ca.pem') }),
 *   toNodeListener([authenticate([mtlsAuth({ subjectAltNames: ['URI:spiffe://example.org/billing'] })]), routes]),
 * );
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8446#section-4.4.2 | RFC 8446 §4.4.2} (TLS 1.3 client certificates)
 * @see {@link https://www.rfc-editor.org/rfc/rfc8705 | RFC 8705} (OAuth 2.0 mutual-TLS client authentication)
 */
export function mtlsAuth(options: MtlsOptions = {}): Authenticator {
  assertKnownOptions('mtlsAuth()', options, MTLS_OPTIONS);
  const { fingerprints, subjectAltNames, map } = options ?? {};
  if (fingerprints !== undefined && (!Array.isArray(fingerprints) || fingerprints.length === 0)) {
    throw invalidOption('mtlsAuth(): `fingerprints` must be a non-empty array (or left out)');
  }
  if (
    subjectAltNames !== undefined &&
    (!Array.isArray(subjectAltNames) || subjectAltNames.length === 0)
  ) {
    throw invalidOption('mtlsAuth(): `subjectAltNames` must be a non-empty array (or left out)');
  }
  if (map !== undefined && typeof map !== 'function') {
    throw invalidOption('mtlsAuth(): `map` must be a function');
  }
  const digests = fingerprints?.map(parseFingerprint);
  const sans =
    subjectAltNames === undefined
      ? undefined
      : new Set(
          subjectAltNames.map((entry, index) => {
            const san = typeof entry === 'string' ? normalizeSan(entry) : undefined;
            if (san === undefined) {
              throw invalidOption(
                `mtlsAuth(): subjectAltNames[${index}] must look like DNS:name, URI:uri, email:address or IP:address`,
              );
            }
            return san;
          }),
        );
  const toPrincipal = map ?? defaultMap;

  return {
    scheme: 'mTLS',
    async authenticate(req) {
      const presented = getClientCertificate(req);
      if (presented === undefined) return undefined;
      const { certificate, authorized, error } = presented;
      if (!authorized) {
        if (error === 'CERT_HAS_EXPIRED') {
          throw expiredCredentials([], 'The client certificate has expired.');
        }
        throw invalidCredentials(
          [],
          (error !== undefined && REASONS[error]) || 'The client certificate is not trusted.',
        );
      }
      if (digests !== undefined) {
        const digest = hash('sha256', certificate.raw, 'buffer');
        if (!includesDigest(digests, digest)) {
          throw invalidCredentials([], 'The client certificate is not allowed here.');
        }
      }
      if (sans !== undefined) {
        const names = splitSubjectAltNames(certificate.subjectaltname ?? '');
        if (!names.some((entry) => sans.has(normalizeSan(entry) ?? ''))) {
          throw invalidCredentials([], 'The client certificate is not allowed here.');
        }
      }
      const principal = await toPrincipal(certificate, req);
      if (principal === undefined) {
        throw invalidCredentials(
          [],
          map === undefined
            ? 'The client certificate names no subject (CN).'
            : 'The client certificate is not allowed here.',
        );
      }
      return principal;
    },
  };
}
