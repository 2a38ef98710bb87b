// OpenTelemetry for portico, from its diagnostics channels: a server span per request (its
// parent read from the request's `traceparent`), a span per token issued or refused and per
// webhook delivery attempt, and counters of refused credentials and rate-limit hits.
// Nothing here is portico-specific API beyond `portico/diagnostics`: copy it into a service.
import { subscribe, tracingChannel, unsubscribe } from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';
import {
  type Attributes,
  type Meter,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import {
  type AuthRefusedMessage,
  channels,
  type RateLimitedMessage,
  type RequestMessage,
  requestPath,
  type TokenIssuedMessage,
  type TokenRefusedMessage,
  type WebhookAttemptMessage,
} from 'portico/diagnostics';

/**
 * Subscribes to portico's channels and reports to `tracer` and `meter`; returns the function
 * that stops it. Spans never carry a header value, a query or a body: methods, paths (the
 * path alone, `requestPath(req)`: a target in absolute form, `GET http://user:password@host/p`,
 * gives `/p`), status codes, grant types, client ids, endpoint ids.
 */
export function instrumentPortico({ tracer, meter }: { tracer: Tracer; meter: Meter }) {
  const requests = new WeakMap<IncomingMessage, { span: Span; start: number }>();
  const refusedCredentials = meter.createCounter('portico.auth.refused', {
    description: 'Credentials refused (or missing where required), by mechanism and status',
  });
  const rateLimited = meter.createCounter('portico.rate_limit.exceeded', {
    description: 'Requests refused with 429 by a rate limit',
  });

  const requestHandlers = {
    start(message: unknown) {
      const { req, res } = message as RequestMessage;
      const parent = propagation.extract(ROOT_CONTEXT, req.headers);
      const span = tracer.startSpan(
        `${req.method ?? 'GET'} ${requestPath(req)}`,
        {
          kind: SpanKind.SERVER,
          attributes: { 'http.request.method': req.method ?? 'GET', 'url.path': requestPath(req) },
        },
        parent,
      );
      requests.set(req, { span, start: Date.now() });
      res.once('close', () => {
        span.setAttribute('http.response.status_code', res.statusCode);
        if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      });
    },
    error(message: unknown) {
      const { req, error } = message as RequestMessage;
      const span = requests.get(req)?.span;
      if (span === undefined) return;
      span.recordException(error instanceof Error ? error : String(error));
    },
    end() {},
    asyncStart() {},
    asyncEnd() {},
  };

  /** A span for the token endpoint's verdict, child of its request's span. */
  const onToken = (outcome: 'issued' | 'refused') => (message: unknown) => {
    const { req, grantType, clientId } = message as TokenIssuedMessage | TokenRefusedMessage;
    const request = requests.get(req);
    const parent = request === undefined ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, request.span);
    const attributes: Attributes = { 'oauth.outcome': outcome };
    if (grantType !== undefined) attributes['oauth.grant_type'] = grantType;
    if (clientId !== undefined) attributes['oauth.client_id'] = clientId;
    if (outcome === 'refused') attributes['oauth.error'] = (message as TokenRefusedMessage).error;
    const span = tracer.startSpan(
      'oauth.token',
      { attributes, ...(request !== undefined && { startTime: request.start }) },
      parent,
    );
    if (outcome === 'refused') span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };
  const onIssued = onToken('issued');
  const onRefusedToken = onToken('refused');

  const onWebhookAttempt = (message: unknown) => {
    const attempt = message as WebhookAttemptMessage;
    const end = Date.now();
    const span = tracer.startSpan('webhook.deliver', {
      kind: SpanKind.CLIENT,
      startTime: end - attempt.durationMs,
      attributes: {
        'webhook.endpoint_id': attempt.endpointId,
        'webhook.delivery_id': attempt.deliveryId,
        'webhook.event_type': attempt.eventType,
        'webhook.attempt': attempt.attempt,
        ...(attempt.status !== undefined && { 'http.response.status_code': attempt.status }),
      },
    });
    if (!attempt.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: attempt.error });
    span.end(end);
  };
  const onAuthRefused = (message: unknown) => {
    const { mechanism, status, surface } = message as AuthRefusedMessage;
    refusedCredentials.add(1, { mechanism: mechanism ?? 'none', status, surface });
  };
  const onRateLimited = (message: unknown) => {
    rateLimited.add(1, { limit: (message as RateLimitedMessage).limit });
  };

  const subscriptions: [string, (message: unknown) => void][] = [
    [channels.tokenIssued, onIssued],
    [channels.tokenRefused, onRefusedToken],
    [channels.webhookAttempt, onWebhookAttempt],
    [channels.authRefused, onAuthRefused],
    [channels.rateLimited, onRateLimited],
  ];
  const requestChannel = tracingChannel(channels.request);
  requestChannel.subscribe(requestHandlers);
  for (const [name, handler] of subscriptions) subscribe(name, handler);
  return function uninstrument() {
    requestChannel.unsubscribe(requestHandlers);
    for (const [name, handler] of subscriptions) unsubscribe(name, handler);
  };
}
