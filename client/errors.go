package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Reasons reported by Reason, used as the reason label of
// duix_scrape_errors_total.
const (
	ReasonTimeout     = "timeout"
	ReasonHTTP        = "http"
	ReasonAPI         = "api"
	ReasonDecode      = "decode"
	ReasonAuth        = "auth"
	ReasonNetwork     = "network"
	ReasonRateLimited = "rate_limited"
)

// Reasons lists every value Reason can return.
var Reasons = []string{ReasonTimeout, ReasonHTTP, ReasonAPI, ReasonDecode, ReasonAuth, ReasonNetwork, ReasonRateLimited}

// ErrBodyTooLarge is the cause (errors.Is) of a decode error for an answer
// longer than max_response_bytes.
var ErrBodyTooLarge = errors.New("answer larger than max_response_bytes")

// Error is every error of a call to the platform. It carries no text from
// the platform: never a body, a header value or the envelope's message,
// only the fields below and a description chosen by this package.
type Error struct {
	Endpoint string // the endpoint called ("" before a call was made)
	App      string // the app's name in the configuration
	Reason   string // one of Reasons
	Status   int    // the HTTP status, 0 when no answer arrived
	// Code is the envelope's code, kept only when it matches
	// ^[A-Za-z0-9_.-]{1,32}$.
	Code string
	// RetryAfter is how long the platform asked for no calls (429).
	RetryAfter time.Duration

	detail string // fixed text of this package
	err    error  // the cause, for errors.Is and errors.As; never printed
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Endpoint)
	if e.App != "" {
		fmt.Fprintf(&b, " (app %s)", e.App)
	}
	fmt.Fprintf(&b, ": %s", e.Reason)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, ", code %s", e.Code)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, ", retry after %s", e.RetryAfter)
	}
	if e.detail != "" {
		fmt.Fprintf(&b, ": %s", e.detail)
	}
	return strings.TrimPrefix(b.String(), ": ")
}

func (e *Error) Unwrap() error { return e.err }

// safeCode matches the envelope codes an error may carry.
var safeCode = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)

// envelopeCode returns code when it is safe to show, else "".
func envelopeCode(code string) string {
	if safeCode.MatchString(code) {
		return code
	}
	return ""
}

// Reason classifies an error returned by this package into one of Reasons
// ("" for nil). An error from elsewhere is a timeout when a deadline ended
// it, else a network error.
func Reason(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Reason
	case isTimeout(err):
		return ReasonTimeout
	}
	return ReasonNetwork
}

// IsNotFound reports whether err is the platform's refusal of an unknown or
// ended session or conversation (success=false with code 404).
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == ReasonAPI && e.Code == "404"
}

func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err)
}

// transportError classifies an error of sending a request or reading its
// answer: the cause is kept for errors.Is, its text replaced by a fixed
// description (a proxy's or a TLS peer's words never reach an error).
func transportError(err error) *Error {
	var own *Error
	if errors.As(err, &own) { // the token round tripper's
		return own
	}
	e := &Error{Reason: ReasonNetwork, err: err}
	var (
		dns  *net.DNSError
		cert *tls.CertificateVerificationError
		ua   x509.UnknownAuthorityError
	)
	switch {
	case isTimeout(err):
		e.Reason, e.detail = ReasonTimeout, "deadline exceeded"
	case errors.Is(err, context.Canceled):
		e.detail = "canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		e.detail = "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		e.detail = "connection closed by the peer"
	case errors.As(err, &dns):
		e.detail = "DNS lookup failed"
	case errors.As(err, &cert), errors.As(err, &ua):
		e.detail = "TLS certificate not accepted"
	}
	return e
}
