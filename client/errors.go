package client

import (
	"context"
	"errors"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Reasons reported by Reason, the reason label of duix_scrape_errors_total.
const (
	ReasonTimeout     = "timeout"
	ReasonHTTP        = "http"
	ReasonAPI         = "api"
	ReasonDecode      = "decode"
	ReasonAuth        = "auth"
	ReasonNetwork     = "network"
	ReasonRateLimited = "rate_limited"
)

// ErrBodyTooLarge is the cause of the error of an answer over max_response_bytes, or of headers over 24 KiB (capped).
var ErrBodyTooLarge = errors.New("answer larger than max_response_bytes, or its headers than 24 KiB")

// Error is every error of a call to the platform: these fields and fixed words, no text of the platform's (body, header value, message).
type Error struct {
	Endpoint   string        // the endpoint called
	App        string        // the app's name in the configuration
	Reason     string        // one of the Reason constants
	Status     int           // the HTTP status when not 2xx, else 0
	Code       string        // the envelope's code, when it matches ^[A-Za-z0-9_.-]{1,32}$ and is no secret's (codeOf)
	RetryAfter time.Duration // how long the platform asked for no calls (429)

	detail string
	err    error // the cause, for errors.Is and errors.As; never printed
}

func (e *Error) Error() string {
	s := e.Endpoint + when(e.App != "", " (app "+e.App+")") + ": " + e.Reason + when(e.Status != 0, ": HTTP "+strconv.Itoa(e.Status)) +
		when(e.Code != "", ", code "+e.Code) + when(e.RetryAfter > 0, ", retry after "+e.RetryAfter.String()) + when(e.detail != "", ": "+e.detail)
	return strings.TrimPrefix(s, ": ")
}

// when returns s if ok, else "".
func when(ok bool, s string) string { return map[bool]string{true: s}[ok] }

func (e *Error) Unwrap() error { return e.err }

var safeCode = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)

// codeOf returns an envelope's code when it looks like one and shares no 8 characters in a row, in any case, with a
// secret (sent with the call, or a token given before): a platform that echoes a request cannot put them into an error.
func codeOf(code string, secrets []string) string {
	if code = safeCode.FindString(code); len(code) < 8 { // a code of the platform's is short: no secret is looked at
		return code
	}
	all, lower := strings.ToLower(strings.Join(secrets, "\n")), strings.ToLower(code)
	for i := 8; i <= len(code); i++ {
		if strings.Contains(all, lower[i-8:i]) {
			return ""
		}
	}
	return code
}

// Reason classifies err into a Reason constant ("" for nil); an error of
// another package is a timeout when a deadline ended it, else network.
func Reason(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case !errors.As(err, &e):
		e = transportError(err)
	}
	return e.Reason
}

// IsNotFound reports whether err refuses an unknown or ended session or conversation (code 404).
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == ReasonAPI && e.Code == "404"
}

// transportError classifies an error of a request or of reading its answer,
// described by its system error at most: no proxy's or TLS peer's words.
func transportError(err error) *Error {
	var errno syscall.Errno
	e := &Error{Reason: ReasonNetwork, err: err}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err):
		e.Reason, e.detail = ReasonTimeout, "deadline exceeded"
	case errors.Is(err, ErrBodyTooLarge): // capped
		e.Reason, e.detail = ReasonDecode, ErrBodyTooLarge.Error()
	case errors.Is(err, context.Canceled):
		e.detail = "canceled (interrupted)"
	case errors.As(err, &errno):
		e.detail = errno.Error()
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		e.detail = "connection closed"
	}
	return e
}
