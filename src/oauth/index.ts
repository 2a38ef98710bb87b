/**
 * The OAuth 2.0 / OpenID Connect authorization server: signing keys, clients, grants and the
 * endpoints built on them.
 *
 * @module oauth
 */
export {
  createKeySet,
  type KeySet,
  type KeySetOptions,
  type SigningAlgorithm,
  type SigningKey,
} from './key-set.js';
