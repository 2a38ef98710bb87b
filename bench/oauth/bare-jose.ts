/**
 * The floor with portico's signer: plain node:http issuing the same access token (see
 * `floor-server.ts`), signed by `jose` 6 `SignJWT` (WebCrypto, the threadpool), the library
 * portico signs with, with the RSA-2048 key imported once as a `CryptoKey` (`importPKCS8`).
 * portico's rate over this row is its own cost over the signature it cannot avoid.
 */
import { generateKeyPairSync } from 'node:crypto';
import { importPKCS8, SignJWT } from 'jose';
import { type Claims, HEADER, serveFloor } from './floor-server.js';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key = await importPKCS8(
  privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  'RS256',
);

serveFloor(privateKey, (claims: Claims) =>
  new SignJWT(claims).setProtectedHeader(HEADER).sign(key),
);
