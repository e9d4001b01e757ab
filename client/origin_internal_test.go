package client

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An app's record is kept per platform: the same one written another way
// (the case of the scheme or host, a default port written out) is one, and
// another scheme, host or port is another.
func TestOriginIsThePlatformHoweverWritten(t *testing.T) {
	of := func(s string) string {
		u, err := url.Parse(s)
		require.NoError(t, err)
		return origin(u)
	}
	for _, same := range [][2]string{
		{"https://app.duix.ai/x", "HTTPS://App.Duix.AI:443/x"},
		{"http://platform.example", "http://PLATFORM.example:80"},
		{"http://[::1]:8080", "HTTP://[::1]:8080"},
	} {
		assert.Equal(t, of(same[0]), of(same[1]), same)
	}
	for _, other := range [][2]string{
		{"https://app.duix.ai", "http://app.duix.ai"},
		{"https://app.duix.ai", "https://app.duix.ai:8443"},
		{"http://app.duix.ai", "http://app.duix.ai:443"},
		{"https://app.duix.ai", "https://app.duix.ai.evil.example"},
	} {
		assert.NotEqual(t, of(other[0]), of(other[1]), other)
	}
}
