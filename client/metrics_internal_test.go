package client

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// An upstream sending odd statuses cannot create series without bound.
func TestRequestCodesAreBounded(t *testing.T) {
	for code, want := range map[string]string{"200": "200", "429": "429", "error": "error", "299": "2xx", "599": "5xx", "600": "other", "899": "other", "": "other"} {
		assert.Equal(t, want, boundedCode(code), code)
	}
}
