/**
 * WebSocket: {@link createUpgradeHandler} and {@link createChannelProtocol}, which serve the
 * realtime hub's channels; the opening-handshake checks and `Sec-WebSocket-Accept`
 * computation, and the close codes with their rules (which may be sent, which are only
 * reported, how long a reason may be, which code answers a portico error).
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455 | RFC 6455}
 * @module portico/ws
 */

export {
  type ChannelAccess,
  type ChannelAuthorizer,
  type ChannelConnectionContext,
  type ChannelMessageContext,
  type ChannelMessageHandler,
  type ChannelMessageReader,
  type ChannelMessageSender,
  type ChannelProtocol,
  type ChannelProtocolOptions,
  type ChannelRateLimit,
  createChannelProtocol,
} from './channel/channel.js';
export {
  CloseCode,
  type CloseCodeValue,
  WebSocketCloseError,
  type WebSocketCloseErrorOptions,
} from './close-codes.js';
export type {
  UpgradeRequestLike,
  UpgradeValidation,
} from './handshake.js';
export {
  createUpgradeHandler,
  refuseUpgrade,
  type UpgradeContext,
  type UpgradeHandler,
  type UpgradeHandlerOptions,
} from './upgrade.js';
