package simulator

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/golang-jwt/jwt/v5"
)

// Wire strings: messages, codes, header and parameter names.
const (
	msgUnauthorized     = "token invalid or expired"
	msgForbidden        = "token not valid for this app"
	msgConvNotFound     = "conversation not found"
	msgSessionNotFound  = "session not found or not active"
	msgNotFound         = "not found"
	msgMethodNotAllowed = "method not allowed"
	conversationSuccess = "SUCCESS"
	conversationOKCode  = "0"
	defaultSuccessCode  = "200"
	bodyBufferSize      = 32 << 10
	headerAuthorization = "Authorization"
	headerToken         = "token"
	contentTypeJSON     = "application/json"
	bearerPrefixLen     = len("Bearer ")
	queryAppID          = "appId"
	queryUUID           = "uuid"
	queryConversationID = "conversationId"
	sessionStatusInCall = "in_call"
	missingParamSuffix  = " is required"
)

// ServeHTTP serves the platform's API under BasePath.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	name, under := strings.CutPrefix(path, BasePath+"/")
	if !under {
		name = path
	}
	q := r.URL.Query()
	if !under || endpointIndex(name) < 0 {
		s.count(q.Get(queryAppID), name)
		writeError(w, http.StatusNotFound, "404", msgNotFound)
		return
	}

	auth := s.authenticate(r)
	appID := q.Get(queryAppID)
	if appID == "" {
		appID = auth.claimApp
	}
	s.count(appID, name)

	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "405", msgMethodNotAllowed)
		return
	}

	if d := s.latency(appID, name); d > 0 && !wait(r.Context(), d) {
		return // the client went away
	}
	if fn, ok := r.Context().Value(responderKey{}).(Responder); ok {
		fn(w, r, appID, name, func(w http.ResponseWriter) { s.serveEndpoint(w, name, q, auth) })
		return
	}
	s.serveEndpoint(w, name, q, auth)
}

func (s *Simulator) serveEndpoint(w http.ResponseWriter, ep string, q url.Values, auth authResult) {
	if auth.app == nil {
		writeUnauthorized(w)
		return
	}
	switch ep {
	case EndpointConcurrency:
		st, ok := checkApp(w, q, auth)
		if !ok {
			return
		}
		set := st.settings.Load()
		b := make([]byte, 0, 128)
		b = append(b, `{"cropId":`...)
		b = appendJSONString(b, set.CorpID)
		b = append(b, `,"totalConcurrentNumber":`...)
		b = strconv.AppendInt(b, int64(set.Allowance), 10)
		b = append(b, `,"userConcurrentNumber":`...)
		b = strconv.AppendInt(b, int64(st.inUse()), 10)
		b = append(b, '}')
		writeSuccess(w, ep, b)
	case EndpointSessions:
		st, ok := checkApp(w, q, auth)
		if !ok {
			return
		}
		s.writeSessionList(w, auth.claimApp, st)
	case EndpointStop:
		uuid := q.Get(queryUUID)
		if uuid == "" {
			writeMissing(w, queryUUID)
			return
		}
		if !auth.app.end(uuid) {
			writeError(w, http.StatusOK, "404", msgSessionNotFound)
			return
		}
		writeSuccess(w, ep, []byte("true"))
	case EndpointStopAll:
		st, ok := checkApp(w, q, auth)
		if !ok {
			return
		}
		b := append([]byte(`{"count":`), strconv.Itoa(st.endAll())...)
		writeSuccess(w, ep, append(b, '}'))
	case EndpointConversation:
		id := q.Get(queryConversationID)
		if id == "" {
			writeMissing(w, queryConversationID)
			return
		}
		data := auth.app.conversation(id)
		if data == nil {
			writeEnvelope(w, http.StatusOK, "404", msgConvNotFound, true, false, []byte("null"))
			return
		}
		writeSuccess(w, ep, data)
	}
}

// checkApp enforces the required appId parameter and its match with the
// token's app.
func checkApp(w http.ResponseWriter, q url.Values, auth authResult) (*appState, bool) {
	appID := q.Get(queryAppID)
	if appID == "" {
		writeMissing(w, queryAppID)
		return nil, false
	}
	if appID != auth.claimApp {
		writeForbidden(w)
		return nil, false
	}
	return auth.app, true
}

// authResult is the outcome of token verification. claimApp is the appId
// claim even when verification failed (used to attribute the request);
// app is non-nil only for a valid token.
type authResult struct {
	claimApp string
	app      *appState
}

type tokenClaims struct {
	AppID string `json:"appId"`
	jwt.RegisteredClaims
}

var errUnknownApp = errors.New("unknown appId")

func tokenFrom(r *http.Request) string {
	if vals, ok := r.Header[headerAuthorization]; ok {
		if len(vals) == 0 {
			return ""
		}
		v := strings.TrimSpace(vals[0])
		if len(v) <= bearerPrefixLen || !strings.EqualFold(v[:bearerPrefixLen], "Bearer ") {
			return ""
		}
		return strings.TrimSpace(v[bearerPrefixLen:])
	}
	return strings.TrimSpace(r.Header.Get(headerToken))
}

func (s *Simulator) authenticate(r *http.Request) authResult {
	tok := tokenFrom(r)
	if tok == "" {
		return authResult{}
	}
	var claims tokenClaims
	var st *appState
	_, err := s.parser.ParseWithClaims(tok, &claims, func(*jwt.Token) (any, error) {
		st = s.app(claims.AppID)
		if st == nil {
			return nil, errUnknownApp
		}
		return []byte(st.settings.Load().Key), nil
	})
	res := authResult{claimApp: claims.AppID}
	if err == nil && claims.AppID != "" && claims.IssuedAt != nil {
		res.app = st
	}
	return res
}

// Envelope writers.

func writeMissing(w http.ResponseWriter, param string) {
	writeError(w, http.StatusOK, "400", param+missingParamSuffix)
}

func writeUnauthorized(w http.ResponseWriter) {
	writeError(w, http.StatusUnauthorized, "401", msgUnauthorized)
}

func writeForbidden(w http.ResponseWriter) {
	writeError(w, http.StatusForbidden, "403", msgForbidden)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeEnvelope(w, status, code, message, false, false, []byte("null"))
}

// SuccessParts returns the text of a successful answer of an endpoint
// before and after its data. The field order follows the platform's
// samples: concurrency and session list put data second.
func SuccessParts(ep string) (prefix, suffix string) {
	switch ep {
	case EndpointConversation:
		return `{"code":"` + conversationOKCode + `","message":"` + conversationSuccess +
			`","msg":"` + conversationSuccess + `","success":true,"data":`, `}`
	case EndpointConcurrency, EndpointSessions:
		return `{"code":"` + defaultSuccessCode + `","data":`, `,"message":"","success":true}`
	default:
		return `{"code":"` + defaultSuccessCode + `","message":"","success":true,"data":`, `}`
	}
}

// writeSuccess writes a successful envelope; data must be valid JSON.
func writeSuccess(w http.ResponseWriter, ep string, data []byte) {
	prefix, suffix := SuccessParts(ep)
	b := make([]byte, 0, len(prefix)+len(data)+len(suffix))
	b = append(b, prefix...)
	b = append(b, data...)
	b = append(b, suffix...)
	writeBody(w, http.StatusOK, b)
}

// writeEnvelope writes {"code":…,"message":…[,"msg":…],"success":…,"data":…};
// data must be valid JSON.
func writeEnvelope(w http.ResponseWriter, status int, code, message string, withMsg, success bool, data []byte) {
	b := make([]byte, 0, 96+len(data))
	b = append(b, `{"code":`...)
	b = appendJSONString(b, code)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, message)
	if withMsg {
		b = append(b, `,"msg":`...)
		b = appendJSONString(b, message)
	}
	b = append(b, `,"success":`...)
	b = strconv.AppendBool(b, success)
	b = append(b, `,"data":`...)
	b = append(b, data...)
	b = append(b, '}')
	writeBody(w, status, b)
}

func writeBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

var bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bodyBufferSize) }}

// writeSessionList streams the session list envelope.
func (s *Simulator) writeSessionList(w http.ResponseWriter, appID string, st *appState) {
	shape := Shape(s.shape.Load())
	var sessions []Session
	if shape != ShapeNull {
		sessions = st.list() // shared snapshot: read only
	}
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(http.StatusOK)
	bw := bufPool.Get().(*bufio.Writer)
	bw.Reset(w)
	defer func() {
		bw.Reset(nil)
		bufPool.Put(bw)
	}()
	prefix, suffix := SuccessParts(EndpointSessions)
	_, _ = bw.WriteString(prefix)
	var wrapKey string
	switch shape {
	case ShapeNull:
		_, _ = bw.WriteString("null")
	case ShapeList:
		wrapKey = "list"
	case ShapeRecords:
		wrapKey = "records"
	case ShapeRows:
		wrapKey = "rows"
	}
	if shape != ShapeNull {
		if wrapKey != "" {
			_, _ = bw.WriteString(`{"` + wrapKey + `":`)
		}
		appJSON := appendJSONString(nil, appID)
		noConv := s.noConversationIDs.Load()
		rec := make([]byte, 0, 256)
		_ = bw.WriteByte('[')
		for i, ss := range sessions {
			rec = rec[:0]
			if i > 0 {
				rec = append(rec, ',')
			}
			rec = append(rec, `{"uuid":`...)
			idStart := len(rec)
			rec = appendJSONString(rec, ss.ID)
			id := rec[idStart:]
			rec = append(rec, `,"sessionId":`...)
			rec = append(rec, id...)
			if !noConv {
				rec = append(rec, `,"conversationId":`...)
				rec = appendJSONString(rec, ss.ConversationID)
			}
			rec = append(rec, `,"appId":`...)
			rec = append(rec, appJSON...)
			rec = append(rec, `,"startTime":`...)
			rec = strconv.AppendInt(rec, ss.Start.UnixMilli(), 10)
			rec = append(rec, `,"status":"`+sessionStatusInCall+`"}`...)
			if _, err := bw.Write(rec); err != nil {
				return
			}
		}
		_ = bw.WriteByte(']')
		if wrapKey != "" {
			_, _ = bw.WriteString(`,"total":`)
			_, _ = bw.WriteString(strconv.Itoa(len(sessions)))
			_ = bw.WriteByte('}')
		}
	}
	_, _ = bw.WriteString(suffix)
	_ = bw.Flush()
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s)
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
