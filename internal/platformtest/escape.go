package platformtest

import (
	"fmt"
	"strings"
)

// EscapeParts writes each dot-separated part of token (a JWT, an ASCII
// text) with every byte after its first as a \uXXXX JSON escape, which
// encoding/json never writes for these characters: what a platform that
// echoes the token it received in a JSON string may send.
func EscapeParts(token string) string {
	parts := strings.Split(token, ".")
	for i, p := range parts {
		if p == "" {
			continue
		}
		var b strings.Builder
		b.WriteByte(p[0])
		for _, c := range []byte(p[1:]) {
			fmt.Fprintf(&b, `\u%04x`, c)
		}
		parts[i] = b.String()
	}
	return strings.Join(parts, ".")
}
