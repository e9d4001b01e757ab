package client

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCleanHidesEchoedCredentialsItDoesNotKnow(t *testing.T) {
	for _, text := range []string{
		"GET /x HTTP/1.1\r\nAuthorization: Bearer UNKNOWN-CREDENTIAL\r\nAccept: */*",
		"proxy-authorization: Basic UNKNOWN-CREDENTIAL\n",
		`{"headers":{"Authorization":["Bearer UNKNOWN-CREDENTIAL"],"Accept":["*/*"]}}`,
		`{"token":"UNKNOWN-CREDENTIAL","x":1}`,
		`{"message":"echo {\"token\":\"UNKNOWN\/CREDENTIAL\"}"}`,
		"access_token=UNKNOWN-CREDENTIAL&x=1",
		"Token:UNKNOWN-CREDENTIAL",
	} {
		got := clean([]byte(text), false, nil)
		assert.NotContains(t, got, "UNKNOWN", text)
		assert.NotContains(t, got, "CREDENTIAL", text)
		assert.Contains(t, got, redacted, text)
	}
	// Ordinary words are left alone.
	assert.Equal(t, "token invalid or expired; 3 tokens left", clean([]byte("token invalid or expired; 3 tokens left"), false, nil))
}

func TestCleanRedactsBeforeCutting(t *testing.T) {
	secret := "s3cr3t/" + strings.Repeat("x", 40)
	for _, form := range []string{secret, strings.ReplaceAll(secret, "/", `\/`)} {
		body := strings.Repeat(".", maxSnippet-len(form)/2) + form + " tail"
		got := clean([]byte(body), false, []string{secret})
		assert.NotContains(t, got, "s3cr3t", form)
		assert.LessOrEqual(t, len(got), maxSnippet+len("..."))
	}
	// A body read only in part: a secret cut at the end of what was read
	// is dropped with the end, even when white space before it folds.
	body := strings.Repeat(" ", 1000) + "start" + strings.Repeat(".", 40) + secret[:20]
	got := clean([]byte(body), true, []string{secret})
	assert.NotContains(t, got, "s3cr3t")
	assert.Contains(t, got, "start")
}

func TestCutKeepsRunesWhole(t *testing.T) {
	assert.Equal(t, "ab...", cut("abé", 3))
	assert.Equal(t, "abé", cut("abé", 4))
	assert.Equal(t, "", cut("", 3))
}
