// Package platformtest injects faults into the platform simulator for the
// tests and the load harness: New wraps a *simulator.Simulator in an
// http.Handler whose answers SetFault distorts per app and per endpoint
// (HTTP errors, gateway pages, rate limiting, malformed, truncated, slow,
// oversized or endless bodies, connection resets, echoes of the request).
// Start serves one on loopback for a test. The exporter's binary does not
// link this package: the simulator it ships for --demo has no faults.
package platformtest

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/duix-exporter/duix_exporter/simulator"
)

// FaultKind selects the misbehaviour injected by a Fault.
type FaultKind int

// Fault kinds.
const (
	// FaultNone answers normally. Set explicitly, it overrides a less
	// specific fault.
	FaultNone FaultKind = iota
	// FaultHTTP500 answers HTTP 500 with a short JSON envelope, code "500".
	FaultHTTP500
	// FaultHTML502 answers HTTP 502 with an nginx-style text/html page.
	FaultHTML502
	// FaultRateLimit429 answers HTTP 429 with a Retry-After header (whole
	// seconds, rounded up, at least 1) and an envelope with code "429".
	FaultRateLimit429
	// FaultUnauthorized401 answers as for an invalid or expired token.
	FaultUnauthorized401
	// FaultForbidden403 answers as for a token of another app.
	FaultForbidden403
	// FaultTruncatedJSON answers HTTP 200 with the first half of the
	// normal body.
	FaultTruncatedJSON
	// FaultSuccessFalse answers HTTP 200 with success false, code "500".
	FaultSuccessFalse
	// FaultNullData answers a successful envelope whose data is null.
	FaultNullData
	// FaultCodeAsNumber answers the normal body with code as a JSON number.
	FaultCodeAsNumber
	// FaultWrongTypes answers a successful envelope whose data fields have
	// the wrong JSON types.
	FaultWrongTypes
	// FaultSlowBody sends the headers at once, then the normal body in
	// SlowBodyChunks chunks with Fault.Delay before each.
	FaultSlowBody
	// FaultOversizedBody answers HTTP 200 with a valid JSON envelope of
	// Fault.Bytes bytes (DefaultOversizedBytes when 0), streamed, with its
	// Content-Length.
	FaultOversizedBody
	// FaultResetConnection sends the headers and half of the normal body,
	// then resets the TCP connection.
	FaultResetConnection
	// FaultEchoRequest answers HTTP Fault.Status (502 when 0) with a
	// text/plain page that echoes the request, as a misconfigured proxy or
	// debugging gateway does: Fault.Bytes bytes of padding, the request
	// line, then every request header as "Name: value" lines, the
	// credential headers (Proxy-Authorization, Authorization, Token) first
	// in that order.
	FaultEchoRequest
	// FaultEchoRequestJSON answers HTTP Fault.Status (200 when 0) with an
	// envelope of success false whose code is the status and whose message
	// is the text of FaultEchoRequest, encoded with every "/" escaped as
	// "\/" (as some JSON encoders do).
	FaultEchoRequestJSON
	// FaultEcho puts everything the request carried (request line with its
	// query, every header, credentials first: see FaultEchoRequest) in
	// every place of the answer: the reason phrase of the status line
	// (HTTP Fault.Status, 200 when 0; lines joined with " | "), and a JSON
	// envelope of success false whose code is the status and whose
	// message and msg are the echo; for getconcurrentList its data lists
	// one session record whose uuid, sessionId, conversationId and status
	// are the echo (in the platform's field order, data before success, so
	// a streaming reader meets the record first).
	FaultEcho
	// FaultEndlessString answers HTTP 200, chunked, with a successful
	// envelope whose data opens with a string that never ends (cropId for
	// getconcurrentNumber, a session's uuid for getconcurrentList, id for
	// getConversationById): it streams until the client goes away, or,
	// when Fault.Bytes > 0, ends the string and the JSON once the body
	// holds Fault.Bytes bytes.
	FaultEndlessString
	// FaultEndlessList answers getconcurrentList with HTTP 200, chunked, a
	// successful envelope whose data is a list of distinct session records
	// that never ends (or ends once the body holds Fault.Bytes > 0 bytes);
	// the other endpoints as FaultEndlessString.
	FaultEndlessList
	// FaultUnsolicitedEcho answers normally, then writes on the same
	// connection a second answer nobody asked for, whose X-Echo header is
	// the text of FaultEchoRequest, and keeps the connection open a moment:
	// net/http reads it on an idle connection, and logs what it read.
	FaultUnsolicitedEcho
)

var faultNames = [...]string{
	FaultNone:            "none",
	FaultHTTP500:         "http500",
	FaultHTML502:         "html502",
	FaultRateLimit429:    "ratelimit429",
	FaultUnauthorized401: "unauthorized401",
	FaultForbidden403:    "forbidden403",
	FaultTruncatedJSON:   "truncatedjson",
	FaultSuccessFalse:    "successfalse",
	FaultNullData:        "nulldata",
	FaultCodeAsNumber:    "codeasnumber",
	FaultWrongTypes:      "wrongtypes",
	FaultSlowBody:        "slowbody",
	FaultOversizedBody:   "oversizedbody",
	FaultResetConnection: "resetconnection",
	FaultEchoRequest:     "echorequest",
	FaultEchoRequestJSON: "echorequestjson",
	FaultEcho:            "echo",
	FaultEndlessString:   "endlessstring",
	FaultEndlessList:     "endlesslist",
	FaultUnsolicitedEcho: "unsolicitedecho",
}

// String returns a short name of the fault kind.
func (k FaultKind) String() string {
	if k >= 0 && int(k) < len(faultNames) {
		return faultNames[k]
	}
	return "fault(" + strconv.Itoa(int(k)) + ")"
}

// Defaults used when the corresponding Fault field is zero.
const (
	SlowBodyChunks        = 10 // a slow body is sent in this many chunks (fewer if shorter)
	DefaultSlowBodyDelay  = 100 * time.Millisecond
	DefaultOversizedBytes = 32 << 20 // 32 MiB
	DefaultRetryAfter     = time.Second
)

// Fault describes an injected misbehaviour.
type Fault struct {
	Kind       FaultKind
	RetryAfter time.Duration // FaultRateLimit429: Retry-After value
	Bytes      int64         // FaultOversizedBody, FaultEndless*: body size; FaultEchoRequest(JSON): padding before the echo
	Status     int           // FaultEchoRequest(JSON), FaultEcho: HTTP status
	Delay      time.Duration // FaultSlowBody: pause before each chunk; total ≈ Delay × chunks
	Times      int           // 0: until cleared; n > 0: only the next n matching requests
}

// Faults serves a Simulator with the faults set on it. Create it with New.
type Faults struct {
	sim   *simulator.Simulator
	mu    sync.Mutex
	rules map[ruleKey]*faultRule
}

type ruleKey struct{ app, ep string }

type faultRule struct {
	f         Fault
	remaining int // 0 = unlimited
}

// New returns a handler serving sim, without faults until SetFault.
func New(sim *simulator.Simulator) *Faults {
	return &Faults{sim: sim, rules: make(map[ruleKey]*faultRule)}
}

// Simulator returns the simulator f serves.
func (f *Faults) Simulator() *simulator.Simulator { return f.sim }

// SetFault injects a fault for an app and an endpoint; appID "" means every
// app and endpoint "" every endpoint. For a request, the most specific
// setting wins, in this order: (app, endpoint), (app, any endpoint),
// (any app, endpoint), (any app, any endpoint). A fault with Times n > 0
// applies to the next n requests it matches, then disappears. A request is
// matched on the app it is counted for (simulator.RequestsFor), after the
// simulator's latency.
func (f *Faults) SetFault(appID, endpoint string, fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules[ruleKey{appID, endpoint}] = &faultRule{f: fault, remaining: max(fault.Times, 0)}
}

// ClearFaults removes every fault, and the simulator's latencies
// (simulator.ClearLatency).
func (f *Faults) ClearFaults() {
	f.mu.Lock()
	clear(f.rules)
	f.mu.Unlock()
	f.sim.ClearLatency()
}

// ServeHTTP serves the simulator's API, with the faults.
func (f *Faults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.sim.ServeHTTP(w, simulator.WithResponder(r, f.respond))
}

// Listen serves f on a TCP listener at addr, as simulator's Listen does.
func (f *Faults) Listen(addr string) (baseURL string, closeFn func(), err error) {
	return simulator.ListenHandler(addr, f)
}

func (f *Faults) respond(w http.ResponseWriter, r *http.Request, appID, ep string, normal func(http.ResponseWriter)) {
	serveFault(w, r, appID, ep, f.take(appID, ep), normal)
}

// take returns the fault applying to one request, consuming one use of a
// counted fault.
func (f *Faults) take(appID, ep string) Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range [4]ruleKey{{appID, ep}, {appID, ""}, {"", ep}, {"", ""}} {
		r, ok := f.rules[k]
		if !ok {
			continue
		}
		if r.remaining > 0 {
			if r.remaining--; r.remaining == 0 {
				delete(f.rules, k)
			}
		}
		return r.f
	}
	return Fault{}
}
