package client

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// An upstream sending odd statuses cannot create series without bound.
func TestRequestCodesAreBounded(t *testing.T) {
	for status, want := range map[int]string{200: "200", 429: "429", 0: "error", 299: "2xx", 599: "5xx", 600: "other", 899: "other", -1: "other"} {
		assert.Equal(t, want, statusLabel(status), status)
	}
}
