import { hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { DetailedPeerCertificate, TLSSocket } from 'node:tls';

/**
 * The client certificate the TLS connection of this request presented, with whether it
 * verified against the server's CA (`authorized`) and, if not, why. `undefined` when the
 * request did not come over TLS or no certificate was presented.
 *
 * @example
 * ```ts
 * const presented = getClientCertificate(req);
 * if (presented?.authorized) console.log(presented.certificate.subject.CN);
 * ```
 */
export function getClientCertificate(
  req: IncomingMessage,
): { certificate: DetailedPeerCertificate; authorized: boolean; error?: string } | undefined {
  const socket = req.socket as TLSSocket;
  if (socket.encrypted !== true || typeof socket.getPeerCertificate !== 'function')
    return undefined;
  const certificate = socket.getPeerCertificate(true);
  if (certificate === null || Object.keys(certificate).length === 0 || !certificate.raw)
    return undefined;
  const error = socket.authorizationError === null ? undefined : String(socket.authorizationError);
  return { certificate, authorized: socket.authorized === true, error };
}

/**
 * The base64url SHA-256 thumbprint of a certificate's DER encoding: the `x5t#S256`
 * confirmation of certificate-bound tokens (RFC 8705 §3.1).
 *
 * @example
 * ```ts
 * certificateThumbprint(cert); // 'bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8705#section-3.1 | RFC 8705 §3.1}
 */
export function certificateThumbprint(certificate: { raw: Buffer }): string {
  return hash('sha256', certificate.raw, 'base64url');
}
