export { OutboundError, isOutboundError, type OutboundErrorCode, type RefusedClass, type FailureReason } from "./errors";
export { judgeAddress, parseAllowedNetworks, parseAnyIp, isIpLiteral, REFUSED_IPV4, REFUSED_IPV6, type AddressPolicy, type AddressVerdict, type AllowedNetwork } from "./address-policy";
export { judgeHostname, type HostnamePolicy, type HostnameVerdict } from "./hostname-policy";
export { checkOutboundUrl, type OutboundUrl, type OutboundHost } from "./url-policy";
export { pinDestination, systemResolver, type Resolver, type ResolvedAddress, type PinnedDestination, type DestinationOptions } from "./destination";
export { pinnedConnector, type Connector, type ConnectRequest, type ConnectResponse, type ResponseHeaders } from "./connect";
export {
  guardedFetch,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_MAX_REDIRECTS,
  type GuardedFetchOptions,
  type GuardedRequestInit,
  type GuardedResponse,
} from "./guarded-fetch";
