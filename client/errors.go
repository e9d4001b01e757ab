package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
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

// APIError is a response whose envelope says success=false.
type APIError struct {
	Endpoint string
	Code     string
	Message  string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: platform answered success=false, code %q: %s", e.Endpoint, e.Code, e.Message)
}

// HTTPError is a response with a status other than 2xx.
type HTTPError struct {
	Endpoint   string
	StatusCode int
	// Snippet is the start of the body, bounded and made printable.
	Snippet string
	// RetryAfter is the parsed Retry-After header, if any.
	RetryAfter time.Duration
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d", e.Endpoint, e.StatusCode)
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.Snippet != "" {
		msg += ": " + e.Snippet
	}
	return msg
}

// DecodeError is a body that is not the JSON the endpoint documents, or one
// larger than the configured cap.
type DecodeError struct {
	Endpoint string
	Err      error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s: decoding response: %v", e.Endpoint, e.Err)
}
func (e *DecodeError) Unwrap() error { return e.Err }

// TimeoutError is a request that ran out of time.
type TimeoutError struct {
	Endpoint string
	Err      error
}

func (e *TimeoutError) Error() string { return fmt.Sprintf("%s: timeout: %v", e.Endpoint, e.Err) }
func (e *TimeoutError) Unwrap() error { return e.Err }

// NetworkError is a request that failed below HTTP: connection refused or
// reset, DNS, TLS.
type NetworkError struct {
	Endpoint string
	Err      error
}

func (e *NetworkError) Error() string { return fmt.Sprintf("%s: network: %v", e.Endpoint, e.Err) }
func (e *NetworkError) Unwrap() error { return e.Err }

// AuthError is a failure to obtain a token (for example an unreadable key
// file). It never carries the key or the token.
type AuthError struct {
	Err error
}

func (e *AuthError) Error() string { return fmt.Sprintf("auth: %v", e.Err) }
func (e *AuthError) Unwrap() error { return e.Err }

// RateLimitedError is returned without calling the platform while an earlier
// 429's Retry-After has not expired.
type RateLimitedError struct {
	Endpoint string
	Until    time.Time
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("%s: rate limited by the platform until %s", e.Endpoint, e.Until.UTC().Format(time.RFC3339))
}

// ErrBodyTooLarge is wrapped in a DecodeError when a body exceeds
// max_response_bytes.
var ErrBodyTooLarge = errors.New("response body exceeds max_response_bytes")

// Reason classifies an error returned by this package into one of Reasons.
func Reason(err error) string {
	var (
		apiErr  *APIError
		httpErr *HTTPError
		rlErr   *RateLimitedError
		authErr *AuthError
		tErr    *TimeoutError
		dErr    *DecodeError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &rlErr):
		return ReasonRateLimited
	case errors.As(err, &authErr):
		return ReasonAuth
	case errors.As(err, &httpErr):
		switch httpErr.StatusCode {
		case 401, 403:
			return ReasonAuth
		case 429:
			return ReasonRateLimited
		}
		return ReasonHTTP
	case errors.As(err, &apiErr):
		switch apiErr.Code {
		case "401", "403":
			return ReasonAuth
		case "429":
			return ReasonRateLimited
		}
		return ReasonAPI
	case errors.As(err, &tErr), errors.Is(err, context.DeadlineExceeded):
		return ReasonTimeout
	case errors.As(err, &dErr):
		return ReasonDecode
	}
	return ReasonNetwork
}

// IsNotFound reports whether err is the platform's refusal of an unknown or
// ended session or conversation (success=false with a 404-like code).
func IsNotFound(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.Code == "404"
}

// classifyTransport wraps an error from http.Client.Do or from reading a
// body; clean hides secrets in its text.
func classifyTransport(ctx context.Context, endpoint string, err error, clean func(string) string) error {
	var ne net.Error
	timeout := ctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
	err = scrub(err)
	if msg := clean(err.Error()); msg != err.Error() {
		err = &cleanedError{msg: msg, err: err}
	}
	if timeout {
		return &TimeoutError{Endpoint: endpoint, Err: err}
	}
	return &NetworkError{Endpoint: endpoint, Err: err}
}

// scrub drops the *url.Error wrapper, whose text repeats the method and the
// whole request URL: the cause is what an operator needs, and errors stay
// short and stable.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}

// cleanedError shows a cleaned text in place of its cause's, which it
// still wraps for errors.Is and errors.As.
type cleanedError struct {
	msg string
	err error
}

func (e *cleanedError) Error() string { return e.msg }
func (e *cleanedError) Unwrap() error { return e.err }
