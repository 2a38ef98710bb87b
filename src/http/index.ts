/**
 * HTTP conventions: request bodies ({@link readJson}, {@link validate}), method tables and
 * routing ({@link createRouter}), request ids ({@link requestId}), conditional requests,
 * security headers ({@link securityHeaders}), HTTPS ({@link requireHttps}), trusted proxies,
 * representations: ranges ({@link sendRepresentation}), static files ({@link serveStatic}),
 * compression ({@link compression}) and languages ({@link negotiateLanguage}); and
 * availability: maintenance ({@link maintenanceMode}), load shedding ({@link shedLoad}) and
 * health endpoints ({@link healthChecks}).
 *
 * @module portico/http
 */

export {
  type BodyOptions,
  DEFAULT_BODY_LIMIT,
  type ReadJsonOptions,
  readBody,
  readForm,
  readJson,
  readText,
} from './body/body.js';
export {
  type CheckContinueOptions,
  createCheckContinueHandler,
} from './body/continue.js';
export type { StandardSchemaV1 } from './body/standard-schema.js';
export { validate } from './body/validate.js';
export {
  type ClientErrorHandler,
  type ClientErrorHandlerOptions,
  createClientErrorHandler,
} from './client-error.js';
export { type ContentCoding, negotiateEncoding } from './compression/accept-encoding.js';
export { type CompressionOptions, compression, flushResponse } from './compression/compression.js';
export {
  type HealthCheck,
  type HealthEndpoints,
  type HealthOptions,
  healthChecks,
} from './health.js';
export {
  type RequireHttpsOptions,
  requireHttps,
  type TlsServerInput,
  tlsServerOptions,
} from './https.js';
export { ignoreUpgrade } from './ignore-upgrade.js';
export {
  type LoadSample,
  type LoadShedder,
  type LoadSheddingOptions,
  shedLoad,
} from './load-shedding.js';
export {
  type Maintenance,
  type MaintenanceOptions,
  maintenanceMode,
} from './maintenance.js';
export {
  createProxyTrust,
  type ProxyTrust,
  type TrustProxy,
} from './proxy.js';
export {
  type CreateETagOptions,
  checkConditional,
  createETag,
  type ETagComparison,
  evaluatePreconditions,
  formatHttpDate,
  type PreconditionOutcome,
  type RepresentationValidators,
} from './representation/conditional.js';
export {
  type LanguageRange,
  negotiateLanguage,
  parseAcceptLanguage,
  setContentLanguage,
} from './representation/language.js';
export {
  type ByteRange,
  formatContentRange,
  type ParseRangeOptions,
  parseRange,
  type RangeIgnoredReason,
  type RangeVerdict,
} from './representation/range.js';
export {
  type RangeSource,
  type SendRepresentationOptions,
  sendRepresentation,
} from './representation/representation.js';
export { type ServeStaticOptions, serveStatic } from './representation/static-files.js';
export {
  type RequestIdOptions,
  requestId,
} from './request-id.js';
export {
  canonicalPath,
  createRouter,
  getParams,
  getPathname,
  getRoute,
  type MethodTable,
  type MountOptions,
  methods,
  mount,
  notFoundHandler,
  type RouteMatch,
  type Router,
} from './routing/router.js';
export {
  API_CONTENT_SECURITY_POLICY,
  type SecurityHeadersOptions,
  type StrictTransportSecurityOptions,
  securityHeaders,
} from './security-headers.js';
