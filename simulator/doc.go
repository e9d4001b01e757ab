// Package simulator is an in-process stand-in for the HTTP API of a
// digital-human conversation platform (Duix OpenAPI v2), as described in
// docs/platform-api.md.
//
// A Simulator is an http.Handler that serves five GET endpoints under
// BasePath:
//
//   - getConversationById?conversationId=… returns one conversation
//     configuration of the calling application (code "0", message and msg
//     "SUCCESS");
//   - getconcurrentNumber?appId=… returns the concurrency allowance and the
//     number of active sessions of an application (code "200");
//   - getconcurrentList?appId=… lists the active sessions of an application,
//     in start order, in one of several selectable data shapes;
//   - sessionStop?uuid=… ends one active session of the calling application;
//   - distroyCallSessionsByAppId?appId=… ends every active session of an
//     application and answers how many in data: {"count": n} (the
//     misspelling is the platform's).
//
// Every request must carry an access token, either as
// "Authorization: Bearer <token>" or, when that header is absent, as
// "token: <token>". The token is an HS256 JWT signed with the application's
// appKey and carrying the claims appId, iat and exp (see MintToken). Only
// HS256 is accepted; exp is required and checked against the simulator's
// clock (WithClock); iat is required but not compared with the clock.
// Refusals are HTTP 401 (invalid, expired or unknown-app token) and HTTP 403
// (valid token, appId parameter of another app).
//
// The model is independent of any client code: a conversation's answer is
// the platform's documented sample record (conversation.json) with the
// conversation's own values put in, and the other answers are written by
// hand in the platform's field names and order. Applications,
// conversations and sessions are managed through the Go API (AddApp,
// AddConversation, StartSession, ForceSession, EndSession, …). Latency can
// be added per application and per endpoint with SetLatency, and every
// request that reaches the handler is counted (Requests, RequestsFor). The
// simulator injects no faults itself: the tests wrap it in the handler of
// package internal/platformtest, which answers through WithResponder.
//
// NewDemo builds a small populated platform and Churn keeps its sessions
// moving, for demonstrations; NewFleet builds any number of generated apps,
// for load tests. Listen serves a Simulator on a TCP address;
// ListenWithMetrics adds the simulator's own request counts at /metrics.
//
// All methods are safe for concurrent use.
package simulator
