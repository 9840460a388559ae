// One import for the typed layer: its own types, swift-http-types' currency types
// (HTTPRequest, HTTPResponse, HTTPFields), and the transport seam (HTTPBody, Transport…).
@_exported import HTTPTypes
@_exported import SalvoTransport
// swift-log, for `LoggingMiddleware(logger:)`: `Logger` needs no import of its own.
@_exported import Logging
