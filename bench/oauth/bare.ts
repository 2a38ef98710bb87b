/**
 * The floor: plain node:http issuing the same access token with no framework and no library
 * (see `floor-server.ts`), signing with `crypto.sign` on the libuv threadpool, as both
 * servers under test do: the most any RS256 token server can do on this machine.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { type Claims, HEADER, serveFloor } from './floor-server.js';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const header = Buffer.from(JSON.stringify(HEADER)).toString('base64url');

serveFloor(privateKey, (claims: Claims) => {
  const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return new Promise((resolve, reject) => {
    sign('sha256', Buffer.from(input), privateKey, (err, signature) => {
      if (err) reject(err);
      else resolve(`${input}.${signature.toString('base64url')}`);
    });
  });
});
