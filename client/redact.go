package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Every text that comes from the platform, or from anything between it and
// the exporter, reaches an error through clean: it is the one place where
// secrets are hidden and text is cut (docs/platform-api.md#redaction).

// maxSnippet bounds the upstream text an error carries.
const maxSnippet = 256

// redacted replaces a hidden value.
const redacted = "<redacted>"

// credentialValue matches the value after an Authorization,
// Proxy-Authorization or token header name (or JSON key) in echoed text,
// up to the end of the line or the closing quote: an echoing proxy or
// debugging page shows every credential, including those the exporter does
// not know it sent.
var credentialValue = regexp.MustCompile(`(?i)((?:proxy-)?authorization|token)(\s*\\?"?\s*[:=]\s*\[?\s*\\?"?)(?:[^"\\\r\n]|\\/)*`)

// secretForms lists the texts under which a secret may travel: as it is,
// with "/" escaped as "\/" and with the escapes of encoding/json (both
// occur in JSON bodies that echo a request), and percent-encoded.
func secretForms(secret string) []string {
	if secret == "" {
		return nil
	}
	var forms []string
	add := func(f string) {
		if f != "" && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	// Whole, and each part of a JWT (a body may name the signature alone;
	// the header and payload of a minted token are no secret, but long
	// parts are redacted all the same).
	parts := []string{secret}
	// With a backslash of its own, it reads otherwise once an upstream
	// text's escapes are decoded (see clean).
	if d, ok := unescapeAll([]byte(secret)); ok && string(d) != secret {
		parts = append(parts, string(d))
	}
	// Outside ASCII, as a server that reads header bytes as Latin-1
	// (Node.js, Java servlets, Python's http.server) echoes it.
	if l := latin1(secret); l != secret {
		parts = append(parts, l)
	}
	// With its runs of white space folded into one space, as a page or a
	// log line shows a header value of several words.
	if f := strings.Join(strings.Fields(secret), " "); f != secret && f != "" {
		parts = append(parts, f)
	}
	if p := strings.Split(secret, "."); len(p) == 3 {
		for _, part := range p {
			if len(part) >= 16 {
				parts = append(parts, part)
			}
		}
	}
	for _, part := range parts {
		add(part)
		add(strings.ReplaceAll(part, "/", `\/`))
		if b, err := json.Marshal(part); err == nil {
			j := string(b[1 : len(b)-1])
			add(j)
			add(strings.ReplaceAll(j, "/", `\/`)) // both escapes at once
		}
	}
	// Percent-encoded, as a URL that carries it shows it (a redirect's
	// Location, a link in an error page).
	add(url.QueryEscape(secret))
	add(url.PathEscape(secret))
	// With HTML's escapes, as an error page made from a template shows it.
	if strings.ContainsAny(secret, htmlSpecial) {
		for _, r := range htmlEscapers {
			add(r.Replace(secret))
		}
	}
	return forms
}

// htmlSpecial are the characters htmlEscapers change.
const htmlSpecial = `&<>"'+`

// htmlEscapers write a text into HTML as the common template engines do:
// Go's html and text/template, and MarkupSafe (Jinja2, Flask); Go's
// html/template, which escapes "+" too; Python's html.escape and React;
// Java's (Spring's HtmlUtils); PHP's htmlspecialchars.
var htmlEscapers = []*strings.Replacer{
	strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;"),
	strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;"),
	strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#x27;"),
	strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;"),
	strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#039;"),
}

// latin1 returns s read as Latin-1 and written as UTF-8: each byte outside
// ASCII becomes the character of that number.
func latin1(s string) string {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s[:i])
	for _, c := range []byte(s[i:]) {
		b = utf8.AppendRune(b, rune(c))
	}
	return string(b)
}

// basicAuthForm is how user and password travel in a Basic credential.
func basicAuthForm(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// clean makes text from upstream fit for an error: every form of every
// secret is replaced on the whole text first, then credential header
// values; only then is it made printable and cut to maxSnippet bytes. more
// tells that text is only the start of a longer body: a secret cut at its
// end cannot be recognised, so the end that could hold one is dropped.
func clean(text []byte, more bool, secrets []string) string {
	var forms []string
	for _, secret := range secrets {
		forms = append(forms, secretForms(secret)...)
	}
	longest := 0
	for _, f := range forms {
		longest = max(longest, len(f))
	}
	b := asBytes(forms)
	// A credential written with escapes no form has (JSON's \u00e9 for a
	// character outside ASCII, Go's quoting, JSON in a JSON string) is
	// recognised once they are decoded, and shown decoded; text without a
	// backslash is as it was.
	text, ok := redactDecoding(text, b)
	if !ok {
		return redacted
	}
	// HTML's character references in any spelling (&#x2B;, &#x3D;, &apos;,
	// an escaper that keeps ' ...) are decoded to look for a credential;
	// a text in which none is found is shown as it came.
	if bytes.IndexByte(text, '&') >= 0 {
		if u := []byte(html.UnescapeString(string(text))); !bytes.Equal(u, text) {
			r, ok := redactDecoding(u, b)
			if !ok {
				return redacted
			}
			if !bytes.Equal(r, u) {
				text = r
			}
		}
	}
	s := string(text)
	if more {
		// Whatever starts in the last longest-1 bytes may be a secret's
		// beginning; nothing after it was replaced, so it is still there.
		// The read may have stopped inside escapes, which stay undecoded
		// after the decoded start of a secret (up to 12 bytes a round, as
		// in \u00\u003): the count begins before the first backslash near
		// the end, and before a character that may be a piece of one.
		end := len(s)
		near := max(len(s)-max(longest-1, 0)-12*maxRounds, 0)
		if j := strings.IndexByte(s[near:], '\\'); j >= 0 {
			end = max(near+j-utf8.UTFMax, 0)
		}
		s = s[:max(end-max(longest-1, 0), 0)]
	}
	s = credentialValue.ReplaceAllString(s, "${1}${2}"+redacted)
	// Making it printable and cutting it change the text (a control
	// character or a byte that is not UTF-8 becomes '?', white space is
	// folded, "..." is added), which can spell a secret again.
	return string(redactAll([]byte(cut(printable(s), maxSnippet)), b))
}

// redactDecoding replaces forms in text (see redactAll), then decodes one
// round of its escapes (see unescape) and replaces them again, until no
// escape is left: an escape can spell another one, as JSON in a JSON string
// does. A credential is found at whatever depth it was echoed, before
// decoding can change it: one with a backslash of its own (a\nb) is no
// longer itself once decoded. ok is false when escapes are still left
// after maxRounds rounds.
func redactDecoding(text []byte, forms [][]byte) (_ []byte, ok bool) {
	for range maxRounds {
		text = redactAll(text, forms)
		out := unescape(text)
		if len(out) == len(text) { // decoding an escape shortens the text
			return text, true
		}
		text = out
	}
	text = redactAll(text, forms)
	return text, len(unescape(text)) == len(text)
}

// unescapeAll decodes escapes until none is left, at most maxRounds times.
func unescapeAll(text []byte) (_ []byte, ok bool) {
	return redactDecoding(text, nil)
}

// unescape decodes the backslash escapes of JSON strings and of Go's
// quoting in text: \" \\ \/ \' \a \b \f \n \r \t \v, \ooo and \xHH (a byte),
// \uXXXX (with a following low surrogate, one character; alone, U+FFFD, as
// encoding/json reads it) and \UXXXXXXXX. A backslash that begins none of
// them is kept. text is returned as it is when it has no backslash.
func unescape(text []byte) []byte {
	if bytes.IndexByte(text, '\\') < 0 {
		return text
	}
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); {
		c := text[i]
		if c != '\\' || i+1 == len(text) {
			out = append(out, c)
			i++
			continue
		}
		if b, ok := simpleEscapes[text[i+1]]; ok {
			out = append(out, b)
			i += 2
			continue
		}
		switch text[i+1] {
		case '0', '1', '2', '3': // an octal byte, as Go and C write one
			if len(text) >= i+4 && isOctal(text[i+2]) && isOctal(text[i+3]) {
				out = append(out, (text[i+1]-'0')<<6|(text[i+2]-'0')<<3|(text[i+3]-'0'))
				i += 4
				continue
			}
		case 'x':
			if len(text) >= i+4 {
				hi, ok1 := unhex(text[i+2])
				lo, ok2 := unhex(text[i+3])
				if ok1 && ok2 {
					out = append(out, hi<<4|lo)
					i += 4
					continue
				}
			}
		case 'u':
			if r, ok := hexRune(text[i+2:], 4); ok {
				n := 6
				if utf16.IsSurrogate(r) {
					pair := utf8.RuneError
					if len(text) >= i+12 && text[i+6] == '\\' && text[i+7] == 'u' {
						if lo, ok := hexRune(text[i+8:], 4); ok {
							pair = utf16.DecodeRune(r, lo)
						}
					}
					if r = pair; r != utf8.RuneError {
						n = 12
					}
				}
				out = utf8.AppendRune(out, r)
				i += n
				continue
			}
		case 'U':
			if r, ok := hexRune(text[i+2:], 8); ok && r >= 0 && r <= utf8.MaxRune {
				out = utf8.AppendRune(out, r)
				i += 10
				continue
			}
		}
		out = append(out, c)
		i++
	}
	return out
}

// simpleEscapes are the one-letter escapes of JSON and Go.
var simpleEscapes = map[byte]byte{
	'"': '"', '\\': '\\', '/': '/', '\'': '\'',
	'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v',
}

// hexRune reads n hexadecimal digits (at most 8) at the start of b. Eight
// digits above 7fffffff read as a negative rune.
func hexRune(b []byte, n int) (rune, bool) {
	if len(b) < n {
		return 0, false
	}
	var v rune
	for _, c := range b[:n] {
		d, ok := unhex(c)
		if !ok {
			return 0, false
		}
		v = v<<4 | rune(d)
	}
	return v, true
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }

// unhex returns the value of a hexadecimal digit.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// printable replaces control characters and invalid UTF-8 and folds runs of
// white space into one space.
func printable(s string) string {
	var sb strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		switch {
		case r == utf8.RuneError:
			sb.WriteByte('?')
		case r == '\n' || r == '\r' || r == '\t':
			sb.WriteByte(' ')
		case r < 0x20 || r == 0x7f:
			sb.WriteByte('?')
		default:
			sb.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(sb.String()), " ")
}

// cut shortens s to at most n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// redactAll replaces every one of forms (of secrets: see secretForms and
// asBytes) in b with the redaction mark (plain text, valid inside a JSON
// string).
//
// A body holds a form only if it holds the form's first probeLen bytes,
// and almost no body holds any: those are looked for first. A JWT's forms
// are 36 to 168 bytes long, and a search for a pattern longer than 64
// bytes takes the slow path of bytes.Index: for the two answers of a
// scrape of one app, 1.6 µs with the whole forms, 0.74 µs with their
// starts (BenchmarkRedactingAnAppsAnswers, `make bench-go`, on the
// machine of docs/performance.md).
//
// A mark put in can make a form again with the text beside it (a secret
// that ends in '<' or begins with '>', or one that another's mark
// completes), so rounds go on until one finds no form; past maxRounds,
// nothing of b is kept.
func redactAll(b []byte, forms [][]byte) []byte {
	for range maxRounds {
		if !holdsAStart(b, forms) {
			return b
		}
		replaced := false
		for _, f := range forms {
			if bytes.Contains(b, f) {
				b = bytes.ReplaceAll(b, f, []byte(redacted))
				replaced = true
			}
		}
		if !replaced {
			return b
		}
	}
	return []byte(redacted)
}

// maxRounds bounds the rounds of redactAll. A form the mark itself holds
// (a secret such as "d>") would make them endless.
const maxRounds = 8

// holdsAStart reports whether b holds the first probeLen bytes of one of
// forms.
func holdsAStart(b []byte, forms [][]byte) bool {
	for _, f := range forms {
		if bytes.Contains(b, f[:min(len(f), probeLen)]) {
			return true
		}
	}
	return false
}

// probeLen is the length of the start of a form that redactAll looks for
// first.
const probeLen = 16

// minRawForm is the length under which a form is not replaced in an
// answer before it is decoded. A short secret (a proxy user such as
// "user", a header value such as "10") is also a piece of the answer's
// syntax: a member's name (userConcurrentNumber), a number, true. Replaced
// there, it would make the answer undecodable or a count silently zero;
// in the strings decoded from it, it is replaced all the same.
const minRawForm = 8

// splitShort splits forms, longest first (see asBytes), into those
// replaced in an answer before it is decoded and those shorter than
// minRawForm, replaced only in what is decoded.
func splitShort(forms [][]byte) (long, short [][]byte) {
	i, _ := slices.BinarySearchFunc(forms, minRawForm-1, func(f []byte, n int) int { return n - len(f) })
	if i == len(forms) {
		return forms, nil
	}
	return forms[:i:i], forms[i:]
}

// asBytes converts forms once for redactAll, which would otherwise convert
// (and allocate) each of them for every answer, longest first (see
// longestFirst). A form found in an earlier one (each part of a token)
// shares its bytes: at 5000 apps, the copies of the parts were 0.9 MB of
// live heap.
func asBytes(forms []string) [][]byte {
	forms = slices.Clone(forms)
	longestFirst(forms)
	out := make([][]byte, len(forms))
	for i, f := range forms {
		for j := range i {
			if k := strings.Index(forms[j], f); k >= 0 {
				out[i] = out[j][k : k+len(f) : k+len(f)]
				break
			}
		}
		if out[i] == nil {
			out[i] = []byte(f)
		}
	}
	return out
}

// longestFirst orders forms from the longest, as redactAll must see them:
// of a secret that begins or ends with another one, the shorter replaced
// first would leave the rest of the longer shown.
func longestFirst[T string | []byte](forms []T) {
	slices.SortStableFunc(forms, func(a, b T) int { return len(b) - len(a) })
}

// redactDecoded replaces every form of the secrets in the strings of the
// value v points to, and in its raw JSON members, once the answer is
// decoded. The body read whole was redacted before it was decoded, but a
// secret can pass that in two ways: with a character written as a \uXXXX
// escape that encoding/json does not write (the forms are those it
// writes), and in an answer too long to be read whole, which streams. Once
// decoded, a string holds the secret as it is.
func redactDecoded(v any, forms [][]byte) {
	if len(forms) > 0 {
		redactValue(reflect.ValueOf(v), forms)
	}
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// redactValue redacts the strings and raw JSON members reachable from v
// that can be set: through pointers, interfaces, structs and slices.
func redactValue(v reflect.Value, forms [][]byte) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			redactValue(v.Elem(), forms)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() { // not a time.Time's location
				redactValue(v.Field(i), forms)
			}
		}
	case reflect.String:
		if s := v.String(); v.CanSet() {
			if r := redactString(s, forms); r != s {
				v.SetString(r)
			}
		}
	case reflect.Slice:
		switch {
		case v.Type() == rawMessageType:
			if v.CanSet() && v.Len() > 0 {
				v.SetBytes(redactJSON(v.Bytes(), forms))
			}
		case v.Type().Elem().Kind() != reflect.Uint8:
			for i := range v.Len() {
				redactValue(v.Index(i), forms)
			}
		}
	}
}

// redactString is s with every one of forms replaced.
func redactString(s string, forms [][]byte) string {
	for _, f := range forms {
		if strings.Contains(s, string(f[:min(len(f), probeLen)])) {
			return string(redactAll([]byte(s), forms))
		}
	}
	return s
}

// redactJSON is raw, a JSON value, with every one of forms replaced. A
// value with an escape is first written again as encoding/json writes it,
// so that an escape it does not write (\uXXXX, a "/" escaped in one place
// and not in another) cannot hide a secret.
func redactJSON(raw []byte, forms [][]byte) []byte {
	if bytes.IndexByte(raw, '\\') >= 0 {
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&v) == nil {
			if b, err := json.Marshal(v); err == nil {
				raw = b
			}
		}
	}
	// A mark inside a string keeps it JSON; a form across its quotes or
	// in a number (a short one, see minRawForm) may not: then the strings
	// of the decoded member are redacted, and when even that fails (a
	// redaction that kept nothing) the member is the mark.
	if out := redactAll(raw, forms); json.Valid(out) {
		return out
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) == nil {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // the mark as it is, not \u003credacted\u003e
		if enc.Encode(redactAny(v, forms)) == nil {
			return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		}
	}
	return []byte(`"` + redacted + `"`)
}

// redactAny is v, a value decoded from JSON, with every one of forms
// replaced in its strings and member names.
func redactAny(v any, forms [][]byte) any {
	switch v := v.(type) {
	case string:
		return redactString(v, forms)
	case json.Number:
		// A short form is a piece of many a number; a long one in a
		// number is the credential itself (a tenant ID, a PIN).
		if long, _ := splitShort(forms); redactString(string(v), long) != string(v) {
			return redacted
		}
	case []any:
		for i := range v {
			v[i] = redactAny(v[i], forms)
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[redactString(k, forms)] = redactAny(e, forms)
		}
		return out
	}
	return v
}
