package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	htmltemplate "html/template"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	promconfig "github.com/prometheus/common/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// Escapes combined (a slash escaped as \/ and & as \u0026 in one JSON
// text), and a JWT's signature named alone, are redacted too.
func TestCleanRedactsEveryForm(t *testing.T) {
	static := "Tok/en&S3cretTail987"
	got := clean([]byte(`{"message":"Authorization: Bearer Tok\/en\u0026S3cretTail987"}`), false, []string{static})
	assert.NotContains(t, got, "S3cretTail987")
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJhcHBJZCI6IjEyMyJ9.S1gnatureS1gnatureS1gnature_-x"
	got = clean([]byte("bad signature S1gnatureS1gnatureS1gnature_-x"), false, []string{jwt})
	assert.NotContains(t, got, "S1gnature")
}

// An upstream that puts the token it received into a successful answer
// cannot have it exported or printed: the body is redacted before decoding.
func TestSuccessfulAnswersAreRedacted(t *testing.T) {
	token := "STATIC-T0KEN-abcdef123456/x"
	body := `{"code":"200","success":true,"data":{"cropId":"corp STATIC-T0KEN-abcdef123456\/x"}}`
	var c Concurrency
	_, _, err := decodeEnvelope(strings.NewReader(body), data{into: &c}, asBytes(secretForms(token)))
	require.NoError(t, err)
	assert.Equal(t, "corp <redacted>", c.CropID)
}

// What is decoded is redacted a second time of every form unless the body
// was read whole without a single escape: then its strings are parts of
// the redacted body. d.forms gets the same forms as the caller.
func TestDecodedValuesAreRedactedAgainUnlessTheBodyHadNoEscape(t *testing.T) {
	forms := asBytes(secretForms("STATIC-T0KEN-abcdef123456/x"))
	long := `{"success":true,"data":{"cropId":"` + strings.Repeat("x", wholeBody) + `"}}`
	for name, tc := range map[string]struct {
		body  string
		again bool
	}{
		"plain":          {`{"success":true,"data":{"cropId":"corp-1"}}`, false},
		"escaped slash":  {`{"success":true,"data":{"cropId":"corp\/1"}}`, true},
		"unicode escape": {`{"success":true,"data":{"cropId":"corp\u002d1"}}`, true},
		"escaped name":   {`{"succ\u0065ss":true,"data":{"cropId":"corp-1"}}`, true},
		"long":           {long, true},
		"not UTF-8":      {"{\"success\":true,\"data\":{\"cropId\":\"corp\xff1\"}}", true},
	} {
		var (
			c     Concurrency
			given [][]byte
		)
		env, again, err := decodeEnvelope(strings.NewReader(tc.body), data{into: &c, forms: &given}, forms)
		require.NoError(t, err, name)
		require.NotNil(t, env.Success, name)
		if tc.again {
			assert.Equal(t, forms, again, name)
		} else {
			assert.Nil(t, again, name)
		}
		assert.Equal(t, again, given, name)
	}
}

// A byte that is not UTF-8 decodes as U+FFFD: a secret holding that
// character, echoed with such a byte, is found only once decoded.
func TestASecretSpelledWithBytesThatAreNotUTF8IsRedacted(t *testing.T) {
	key := "KEY-\ufffd-0123456789abcdef"
	forms := asBytes(secretForms(key))
	body := "{\"success\":true,\"data\":{\"cropId\":\"corp KEY-\xff-0123456789abcdef\"}}"
	var c Concurrency
	_, again, err := decodeEnvelope(strings.NewReader(body), data{into: &c}, forms)
	require.NoError(t, err)
	redactDecoded(&c, again)
	assert.Equal(t, "corp <redacted>", c.CropID)
}

// A redaction mark can spell a secret again with the text beside it: a
// secret that ends in '<' or begins with '>', one that another secret's
// mark completes, or one whose first character a cut form leaves as a
// byte that is not UTF-8. Rounds go on until none is left, in an answer's
// strings and in an error's text.
func TestAMarkCannotSpellASecretAgain(t *testing.T) {
	for name, tc := range map[string]struct {
		secrets []string
		text    string
	}{
		"ends in <":      {[]string{"hunter2hunter2hunter2<"}, "hunter2hunter2hunter2hunter2hunter2hunter2<"},
		"three rounds":   {[]string{"hunter2hunter2hunter2<"}, strings.Repeat("hunter2hunter2hunter2", 3) + "<"},
		"begins with >":  {[]string{">hunter2hunter2hunter2"}, ">hunter2hunter2hunter2hunter2hunter2hunter2"},
		"another's mark": {[]string{"d>passwordpassword", "TOKENTOKENTOKENTOKEN"}, "TOKENTOKENTOKENTOKENpasswordpassword"},
		"cut character":  {[]string{"abcdefghijklmnopqrs\xe2\x82", "\ufffdsecretsecretsecret"}, "abcdefghijklmnopqrs\u20acsecretsecretsecret"},
	} {
		var forms []string
		for _, secret := range tc.secrets {
			forms = append(forms, secretForms(secret)...)
		}
		body := `{"success":true,"data":{"cropId":"` + tc.text + `"}}`
		var c Concurrency
		_, again, err := decodeEnvelope(strings.NewReader(body), data{into: &c}, asBytes(forms))
		require.NoError(t, err, name)
		redactDecoded(&c, again)
		cleaned := clean([]byte(tc.text), false, tc.secrets)
		for _, secret := range tc.secrets {
			assert.NotContains(t, c.CropID, secret, name)
			assert.NotContains(t, cleaned, secret, name)
		}
		assert.Contains(t, c.CropID, redacted, name)
	}
}

// Credentials with characters a minted token never has ('/', '"', '<',
// white space, a trailing '.') can be spelled again by the escapes of a
// raw JSON member, or by what makes an error's text printable and short.
func TestSecretsWithOtherCharactersAreRedactedWhateverTheirSpelling(t *testing.T) {
	f := func(s string) [][]byte { return asBytes(secretForms(s)) }
	assert.NotContains(t, string(redactJSON([]byte(`"a\/b/cdefghijklmnop"`), f("a/b/cdefghijklmnop"))), `cdefghijklmnop`, "slashes escaped in part")
	assert.NotContains(t, string(redactJSON([]byte(`"pa\"ss<word-0123456789"`), f(`pa"ss<word-0123456789`))), `ss<word`, "a quote and <")
	assert.NotContains(t, clean([]byte("pass\x00word-0123456789"), false, []string{"pass?word-0123456789"}), "pass?word", "a control character")
	assert.NotContains(t, clean([]byte("Basic\tdXNlcjpwYXNz"), false, []string{"Basic dXNlcjpwYXNz"}), "dXNlcjpwYXNz", "white space folded")
	assert.NotContains(t, clean([]byte(strings.Repeat("x", 240)+"horse-battery-stZZ"), false, []string{"horse-battery-st..."}), "horse-battery-st...", "the cut's dots")
	out := redactJSON([]byte(`{"k":"xd>y"}`), f("d>"))
	assert.True(t, json.Valid(out), "a member whose redaction kept nothing is still JSON: %s", out)
}

// A form that the mark itself holds would make the rounds endless: past
// maxRounds, nothing of the text is kept.
func TestEndlessRoundsKeepNothing(t *testing.T) {
	assert.Equal(t, redacted, string(redactAll([]byte(`{"cropId":"xd>y"}`), asBytes(secretForms("d>")))))
	// A secret that short is replaced in an answer's strings once decoded.
	var c Concurrency
	_, again, err := decodeEnvelope(strings.NewReader(`{"success":true,"data":{"cropId":"xd>y"}}`), data{into: &c}, asBytes(secretForms("d>")))
	require.NoError(t, err)
	redactDecoded(&c, again)
	assert.Equal(t, redacted, c.CropID)
}

// The bytes of every form are the form, whether copied or shared with an
// earlier form, and a shared part cannot be appended into its whole.
func TestAsBytesKeepsEveryFormWhole(t *testing.T) {
	token := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJhcHBJZCI6ImEvYiJ9.c2lnbmF0dXJlLXdpdGgtLXNsYXNoZXMvLw"
	forms := append(secretForms(token), secretForms("key/with\"quote")...)
	require.Greater(t, len(forms), 5)
	got := asBytes(forms)
	want := slices.Clone(forms)
	longestFirst(want)
	assert.Equal(t, want, toStrings(got), "every form, longest first")
	assert.NotEqual(t, forms, want, "in another order than given")
	assert.Equal(t, token, forms[0])
	// The shorter first: appending to a part of the token, written into the
	// token's bytes, would show in the token once it is appended to.
	for i := len(got) - 1; i >= 0; i-- {
		got[i] = append(got[i], 'x')
	}
	for i := range want {
		assert.Equal(t, want[i]+"x", string(got[i]), "appending to a form leaves every other one as it was")
	}
}

func toStrings(b [][]byte) []string {
	out := make([]string, len(b))
	for i := range b {
		out[i] = string(b[i])
	}
	return out
}

// redactAll first looks for the starts of the forms: a body that holds
// only a start is left as it is, and each form is redacted wherever it
// is, the first or a later one, longer than a start or shorter.
func TestRedactAllFindsEveryFormByItsStart(t *testing.T) {
	token := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJhcHBJZCI6IjE3OTAwMDAwMDAwMDAwMDAwMDEiLCJleHAiOjE3NjM5MDAwMDB9.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmUtc2lnbg"
	forms := asBytes(append(secretForms(token), secretForms("short/key")...))
	parts := strings.Split(token, ".")
	for _, tc := range []struct{ name, body, want string }{
		{"the start of the token alone", `{"x":"` + token[:probeLen+4] + `"}`, `{"x":"` + token[:probeLen+4] + `"}`},
		{"the start of the signature alone", `{"x":"` + parts[2][:probeLen] + `"}`, `{"x":"` + parts[2][:probeLen] + `"}`},
		{"the whole token", `{"x":"` + token + `"}`, `{"x":"<redacted>"}`},
		{"the payload", `{"x":"` + parts[1] + `"}`, `{"x":"<redacted>"}`},
		{"the signature", `{"x":"` + parts[2] + `"}`, `{"x":"<redacted>"}`},
		{"a form shorter than a start", `{"x":"short\/key"}`, `{"x":"<redacted>"}`},
		{"nothing", `{"x":"y"}`, `{"x":"y"}`},
	} {
		assert.Equal(t, tc.want, string(redactAll([]byte(tc.body), forms)), tc.name)
	}
}

// BenchmarkRedactingAnAppsAnswers redacts the two answers of a scrape of
// one app (getconcurrentNumber and a two-entry getconcurrentList, neither
// holding a secret) with the forms of a minted token and a key: first
// looking for the forms' starts, as redactAll does, and, for comparison,
// for the whole forms only.
func BenchmarkRedactingAnAppsAnswers(b *testing.B) {
	tok := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJhcHBJZCI6IjE3OTAwMDAwMDAwMDAwMDAwMDEiLCJleHAiOjE3OTU0NjIxMTksImlhdCI6MTc5NTQ2MDMxOX0.35cWmO8W27Xe59ODLXVNNvKibEKlg84hdv1W7Eg2OZs"
	forms := asBytes(append(secretForms(tok), secretForms("KEY-b7f3e1d9c2a4-recognisable")...))
	answers := [][]byte{
		[]byte(`{"code":"200","message":"","success":true,"data":{"cropId":"corp-1","totalConcurrentNumber":10,"userConcurrentNumber":2}}`),
		[]byte(`{"code":"0","message":"success","success":true,"data":[{"uuid":"0b7c1c2e-1a2b-4c3d-9e8f-0123456789ab","sessionId":"1790000000000000123","conversationId":"100100","startTime":1763900000000,"appId":"1790000000000000001"},{"uuid":"1b7c1c2e-1a2b-4c3d-9e8f-0123456789ab","sessionId":"1790000000000000124","conversationId":"100100","startTime":1763900000000,"appId":"1790000000000000001"}]}`),
	}
	b.Run("starts first", func(b *testing.B) {
		for b.Loop() {
			for _, a := range answers {
				redactAll(a, forms)
			}
		}
	})
	b.Run("whole forms", func(b *testing.B) {
		for b.Loop() {
			for _, a := range answers {
				for _, f := range forms {
					if bytes.Contains(a, f) {
						b.Fatal("no form is in these answers")
					}
				}
			}
		}
	})
}

// The credentials of secret header values are known whole, trimmed as
// they are sent and, after a scheme, without it: an upstream may show
// either. Header values read from files are left to the client.
func TestTransportSecretsIncludeHeaderCredentialsWithoutTheirScheme(t *testing.T) {
	hc := promconfig.HTTPClientConfig{
		ProxyConfig: promconfig.ProxyConfig{ProxyConnectHeader: promconfig.ProxyHeader{"Proxy-Authorization": {"Basic cHJveHk6c2VjcmV0"}}},
		HTTPHeaders: &promconfig.Headers{Headers: map[string]promconfig.Header{
			"X-Api-Key":   {Secrets: []promconfig.Secret{"Key  KEY-VALUE-123 "}, Values: []string{"Public value"}},
			"X-Plain":     {Secrets: []promconfig.Secret{"PLAIN-VALUE-456"}},
			"X-Tab":       {Secrets: []promconfig.Secret{"Key\tTAB-VALUE-789"}},
			"X-From-File": {Files: []string{"/b/header", "/a/header"}, Values: []string{"kept"}},
			"X-Again":     {Files: []string{"/a/header"}},
		}},
	}
	assert.ElementsMatch(t, []string{
		"Basic cHJveHk6c2VjcmV0", "cHJveHk6c2VjcmV0",
		"Key  KEY-VALUE-123 ", "Key  KEY-VALUE-123", "KEY-VALUE-123",
		"PLAIN-VALUE-456",
		"Key\tTAB-VALUE-789", "TAB-VALUE-789",
	}, transportSecrets(&hc), "values that are not secret are not among them")

	hc.HTTPHeaders.Headers["X-Public"] = promconfig.Header{Values: []string{"p1", "p2"}}
	hc.HTTPHeaders.Headers["X-Nothing"] = promconfig.Header{}
	stripped, own := ownHeaders(hc)
	assert.Equal(t, []Header{
		{Name: "X-Again", Path: "/a/header"},
		{Name: "X-Api-Key", Value: "Public value"}, {Name: "X-Api-Key", Value: "Key  KEY-VALUE-123 "},
		{Name: "X-From-File", Value: "kept"}, {Name: "X-From-File", Path: "/b/header"}, {Name: "X-From-File", Path: "/a/header"},
		{Name: "X-Plain", Value: "PLAIN-VALUE-456"},
		{Name: "X-Tab", Value: "Key\tTAB-VALUE-789"},
	}, own, "by name and, for one name, values, secrets, files, as prometheus/common sends them")
	assert.Equal(t, map[string]promconfig.Header{"X-Public": {Values: []string{"p1", "p2"}}}, stripped.HTTPHeaders.Headers,
		"prometheus/common is left the headers with nothing secret, and not one with nothing to send")
	assert.Len(t, hc.HTTPHeaders.Headers["X-From-File"].Files, 2, "the configuration is left as it was")
	stripped, own = ownHeaders(promconfig.HTTPClientConfig{HTTPHeaders: &promconfig.Headers{Headers: map[string]promconfig.Header{
		"X-Only-File": {Files: []string{"/a/header"}},
	}}})
	assert.Nil(t, stripped.HTTPHeaders, "no header configuration is left: requests are not copied to add nothing")
	assert.Equal(t, []Header{{Name: "X-Only-File", Path: "/a/header"}}, own)
	assert.Equal(t, []string{"Bearer x", "x"}, headerSecrets("Bearer x"))
	assert.Equal(t, []string{"x"}, headerSecrets("x"))
}

func TestUnescapeDecodesJSONAndGoEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`plain text`:                  `plain text`,
		`a\"b\\c\/d\'e`:               `a"b\c/d'e`,
		`\a\b\f\n\r\t\v`:              "\a\b\f\n\r\t\v",
		`\x41\x7e\xff`:                "A~\xff",
		`\101\011\377 \400 \08`:       "A\t\xff \\400 \\08",
		`\u0053\u00e9\u20AC`:          "Sé€",
		`\ud83d\ude00 \U0001F600`:     "😀 😀",
		`\ud83d alone, \ude00 alone`:  "\uFFFD alone, \uFFFD alone",
		`\q \x4 \u12 \U0011FFFF end\`: `\q \x4 \u12 \U0011FFFF end\`,
		`\\u0053`:                     `\u0053`,
	} {
		assert.Equal(t, want, string(unescape([]byte(in))), in)
	}
	out, ok := unescapeAll([]byte(`\\\\u0053`))
	assert.True(t, ok)
	assert.Equal(t, "S", string(out), "escapes that spell escapes are decoded too")
}

// A credential with characters a minted token never has, echoed with
// escapes no form of it has (JSON's \uXXXX for every character or for
// those outside ASCII, Go's quoting, JSON in a JSON string), is redacted:
// neither what is shown nor what a reader would make of it by decoding
// its escapes holds it.
func TestCredentialsWrittenWithEscapesAreRedacted(t *testing.T) {
	for _, secret := range []string{
		"clé-secrète-0123456789",
		`pa"ss\word<0123456789>`,
		"tab\there-and\x01control-0123",
		"emoji-😀-0123456789abcdef",
	} {
		every := func(s string) string {
			var b strings.Builder
			for _, r := range s {
				if r > 0xFFFF {
					hi, lo := utf16.EncodeRune(r)
					fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
				} else {
					fmt.Fprintf(&b, `\u%04X`, r)
				}
			}
			return b.String()
		}
		ascii := func(s string) string { // Python's json.dumps, PHP's json_encode
			var b strings.Builder
			for _, r := range s {
				switch {
				case r == '"' || r == '\\':
					b.WriteString(`\` + string(r))
				case r == '/':
					b.WriteString(`\/`)
				case r < 0x20 || r > 0x7e:
					b.WriteString(every(string(r)))
				default:
					b.WriteRune(r)
				}
			}
			return b.String()
		}
		octal := func(s string) string {
			var b strings.Builder
			for i := 0; i < len(s); i++ {
				if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
					fmt.Fprintf(&b, `\%03o`, c)
				} else {
					b.WriteByte(c)
				}
			}
			return b.String()
		}
		inner, err := json.Marshal(map[string]string{"message": "bad key " + secret})
		require.NoError(t, err)
		nested, err := json.Marshal(map[string]string{"error": "upstream said " + string(inner)})
		require.NoError(t, err)
		for name, text := range map[string]string{
			"every character escaped": `{"message":"bad key ` + every(secret) + `"}`,
			"outside ASCII escaped":   `{"message":"bad key ` + ascii(secret) + `"}`,
			"quoted by Go":            fmt.Sprintf("dial: bad key %q", secret),
			"octal, as C quotes":      `bad key "` + octal(secret) + `"`,
			"JSON in a JSON string":   string(nested),
			"twice nested":            `{"e":` + strconv.Quote(string(nested)) + `}`,
		} {
			for _, more := range []bool{false, true} {
				got := clean([]byte(text+strings.Repeat(" ", 40)), more, []string{secret})
				decoded, ok := unescapeAll([]byte(got))
				require.True(t, ok)
				for _, shown := range []string{got, string(decoded)} {
					for n := 8; n <= len(secret); n++ {
						require.NotContains(t, shown, secret[:n], "%q %s (more %t): %s", secret, name, more, got)
					}
				}
				assert.Contains(t, got, redacted, "%q %s: %s", secret, name, got)
			}
		}
	}
}

// A server that reads header bytes as Latin-1 (Node.js, Java servlets,
// Python's http.server) echoes each byte of a credential outside ASCII as
// a character of its own: "é" (two bytes) comes back as "Ã©", raw or as
// "\u00c3\u00a9". A credential held as Latin-1 bytes comes back as UTF-8.
func TestCredentialsEchoedAsLatin1AreRedacted(t *testing.T) {
	// The third holds byte 0xE9 alone, not UTF-8.
	for _, secret := range []string{"clé-secrète-0123456789", "emoji-😀-0123456789abcdef", "raw-\xe9-byte-0123456789"} {
		echoed := latin1(secret)
		require.NotEqual(t, secret, echoed)
		var ascii strings.Builder // as Python's json.dumps writes it
		for _, r := range echoed {
			if r > 0x7e {
				fmt.Fprintf(&ascii, `\u%04x`, r)
			} else {
				ascii.WriteRune(r)
			}
		}
		for name, text := range map[string]string{
			"raw":     "bad key " + echoed + " end",
			"in JSON": `{"message":"bad key ` + ascii.String() + `"}`,
		} {
			got := clean([]byte(text), false, []string{secret})
			for n := 8; n <= len(echoed); n++ {
				require.NotContains(t, got, echoed[:n], "%q %s: %s", secret, name, got)
			}
			assert.Contains(t, got, redacted, "%q %s: %s", secret, name, got)
		}
	}
	assert.Equal(t, "plain-ascii", latin1("plain-ascii"))
}

// A credential with characters a URL escapes (an app key's "+", "/" and
// "=") is also known percent-encoded, as a redirect's Location or a link
// in an error page shows it.
func TestCredentialsInURLsAreRedacted(t *testing.T) {
	const secret = "k3y+with/slash and=0123456789=="
	for _, text := range []string{
		"see https://login.example/?next=%2Fapi&key=" + url.QueryEscape(secret) + "&x=1",
		"moved to /keys/" + url.PathEscape(secret) + "/usage",
	} {
		got := clean([]byte(text), false, []string{secret})
		assert.Contains(t, got, redacted, text)
		for _, spelled := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret)} {
			for n := 8; n <= len(spelled); n++ {
				require.NotContains(t, got, spelled[:n], "%s: %s", text, got)
			}
		}
	}
	assert.Len(t, secretForms("eyJhbGciOiJIUzI1NiJ9.eyJhcHBJZCI6IjEifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ"), 4,
		"a token has no other spelling in a URL: the whole, and its three parts")
}

// Of two secrets where one begins or ends with the other, the longer is
// replaced whole, whatever their order: the shorter first left the rest
// of the longer shown.
func TestASecretInsideAnotherLeavesNothingOfIt(t *testing.T) {
	const short, long = "SHARED-0123456789abcdef", "SHARED-0123456789abcdef-TAIL-zyxwvu"
	const ends = "HEAD-zyxwvu-" + short
	for _, secrets := range [][]string{{short, long, ends}, {long, ends, short}, {ends, short, long}} {
		got := clean([]byte("a "+long+" b "+ends+" c "+short+" d"), false, secrets)
		assert.Equal(t, "a <redacted> b <redacted> c <redacted> d", got, "%q", secrets)
	}
	// Likewise a header file's value beside the token's forms.
	c := &Client{t: &Transport{}, tokens: StaticToken(short)}
	forms := c.secretForms(sent{token: short, files: []string{long}})
	assert.Equal(t, "x <redacted> y", string(redactAll([]byte("x "+long+" y"), forms)))
}

// Escapes that spell escapes past maxRounds leave nothing of the text.
func TestEndlessEscapesKeepNothing(t *testing.T) {
	text := `bad key \` + strings.Repeat(`u005c`, 2*maxRounds) + `u0053ECRET-0123456789`
	assert.Equal(t, redacted, clean([]byte(text), false, []string{"SECRET-0123456789"}))
}

// A credential with a backslash of its own (a\nb) is no longer itself
// once an upstream text's escapes are decoded: it is found as it was
// echoed, raw or escaped at any depth, before decoding changes it, and
// what an upstream decoded itself is known too.
func TestCredentialsWithBackslashesAreRedactedBeforeDecoding(t *testing.T) {
	for _, secret := range []string{`0123456789\x41BCDEFGHIJ`, `abcdefghij\nklmnopq`, `abcdefghijkl\`, `\\server\share-0123456789`} {
		once, err := json.Marshal("bad " + secret)
		require.NoError(t, err)
		twice, err := json.Marshal(string(once))
		require.NoError(t, err)
		decoded, ok := unescapeAll([]byte(secret))
		require.True(t, ok)
		for name, text := range map[string]string{
			"raw":                       "bad " + secret + " end",
			"raw, a letter after":       "bad " + secret + "nfoo",
			"in JSON":                   `{"m":` + string(once) + `}`,
			"in JSON in JSON":           `{"e":` + string(twice) + `}`,
			"in JSON in JSON, a letter": `{"e":` + string(twice[:len(twice)-1]) + `nfoo"}`,
			"decoded by the upstream":   "bad " + string(decoded) + " end",
		} {
			got := clean([]byte(text), false, []string{secret})
			shownDecoded, ok := unescapeAll([]byte(got))
			require.True(t, ok)
			for _, shown := range []string{got, string(shownDecoded)} {
				for _, s := range []string{secret, string(decoded)} {
					for n := 8; n <= len(s); n++ {
						require.NotContains(t, shown, s[:n], "%q %s: %s", secret, name, got)
					}
				}
			}
			assert.Contains(t, got, redacted, "%q %s: %s", secret, name, got)
		}
	}
}

// A longer body whose read stopped inside escapes (every character of a
// credential escaped twice, as \u005Cu0030...) keeps undecoded escapes
// after the decoded start of the credential: that start is dropped all
// the same, wherever the read stopped.
func TestTheStartOfACredentialBeforeAnIncompleteEscapeIsDropped(t *testing.T) {
	secret := "0123456789abcdefghij"
	every := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			fmt.Fprintf(&b, `\u%04X`, r)
		}
		return b.String()
	}
	for _, escaped := range []string{every(secret), every(every(secret)), every(fmt.Sprintf("%+q", secret))} {
		for cut := 0; cut <= len(escaped); cut++ {
			got := clean([]byte(`{"message":"bad key `+escaped[:cut]), true, []string{secret})
			decoded, ok := unescapeAll([]byte(got))
			require.True(t, ok)
			for _, shown := range []string{got, string(decoded)} {
				require.NotContains(t, shown, secret[:4], "read up to %d: %s", cut, got)
			}
		}
	}
}

// An error page made from a template shows a credential with HTML's
// escapes: as Go's html and html/template write it (the latter escapes
// "+" too), and as Python, Java and PHP do.
func TestCredentialsEscapedForHTMLAreRedacted(t *testing.T) {
	const secret = `k3y+<0123456789>&"quoted" 'x'`
	var page bytes.Buffer
	require.NoError(t, htmltemplate.Must(htmltemplate.New("").Parse(`{{.}}`)).Execute(&page, secret))
	require.Contains(t, page.String(), "&#43;", "html/template escapes +")
	for name, spelled := range map[string]string{
		"html/template": page.String(),
		"html":          html.EscapeString(secret),
		"Python":        `k3y+&lt;0123456789&gt;&amp;&quot;quoted&quot; &#x27;x&#x27;`,
		"Java":          `k3y+&lt;0123456789&gt;&amp;&quot;quoted&quot; &#39;x&#39;`,
		"PHP":           `k3y+&lt;0123456789&gt;&amp;&quot;quoted&quot; &#039;x&#039;`,
	} {
		got := clean([]byte("<p>bad key "+spelled+"</p>"), false, []string{secret})
		assert.Equal(t, "<p>bad key <redacted></p>", got, name)
	}
	assert.Len(t, secretForms("plain-0123456789"), 1, "a secret with nothing HTML escapes has no other form")

	// Spellings no form has are found once the text's character
	// references are decoded, and the text is then shown decoded.
	for name, tc := range map[string]struct{ secret, page string }{
		".NET, + as &#x2B;":          {"k3y+0123456789abcdef", "k3y&#x2B;0123456789abcdef"},
		"Handlebars, = as &#x3D;":    {"QUJDREVGR0hJSktMTU5PUA==", "QUJDREVGR0hJSktMTU5PUA&#x3D;&#x3D;"},
		"mustache.js, / as &#x2F;":   {"ab/cd0123456789efgh", "ab&#x2F;cd0123456789efgh"},
		"PHP's HTML5, ' as &apos;":   {"it's-0123456789abcdef", "it&apos;s-0123456789abcdef"},
		"' kept, & escaped":          {"a'b&c-0123456789abcdef", "a'b&amp;c-0123456789abcdef"},
		"folded and escaped at once": {"Key\tA&B-0123456789  C-0123456789", "Key A&amp;B-0123456789 C-0123456789"},
	} {
		got := clean([]byte("<p>bad key "+tc.page+"</p>"), false, []string{tc.secret})
		assert.Equal(t, "<p>bad key <redacted></p>", got, name)
	}
	assert.Equal(t, "a &amp; b", clean([]byte("a &amp; b"), false, []string{"SECRET-0123456789"}),
		"a text without a credential is shown as it came")
}
