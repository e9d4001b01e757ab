package simulator

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// BasePath is the path prefix under which the platform serves its API.
const BasePath = "/duix-openapi-v2/sdk/v2"

// Endpoint names; each endpoint is served at BasePath + "/" + name.
const (
	EndpointConversation = "getConversationById"
	EndpointConcurrency  = "getconcurrentNumber"
	EndpointSessions     = "getconcurrentList"
	EndpointStop         = "sessionStop"
	// EndpointStopAll ends every session of an app; the misspelling is the
	// platform's (docs/platform-api.md#operations).
	EndpointStopAll = "distroyCallSessionsByAppId"
)

// Errors returned by the Go API.
var (
	ErrUnknownApp          = errors.New("simulator: unknown app")
	ErrAllowanceExhausted  = errors.New("simulator: concurrency allowance exhausted")
	ErrInvalidConversation = errors.New("simulator: conversation has no ID")
)

// Option configures a Simulator.
type Option func(*Simulator)

// WithClock sets the clock used for session start times and token expiry
// checks. The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(s *Simulator) {
		if now != nil {
			s.now = now
		}
	}
}

// App is an application registered on the platform.
type App struct {
	ID        string // appId
	Key       string // appKey, the HS256 secret of the app's tokens
	CorpID    string // reported as cropId by getconcurrentNumber
	Allowance int    // concurrency allowance (totalConcurrentNumber)
}

// Session is an active (in-call) session.
type Session struct {
	ID             string
	ConversationID string
	Start          time.Time
}

// Simulator models the platform. Create it with New; the zero value is not
// usable.
type Simulator struct {
	now    func() time.Time
	parser *jwt.Parser

	apps  sync.Map // app ID -> *appState
	shape atomic.Int32
	// noConversationIDs leaves conversationId out of session records.
	noConversationIDs atomic.Bool

	latencyMu  sync.Mutex
	latencies  map[ruleKey]time.Duration
	hasLatency atomic.Bool

	totals      [len(knownEndpoints)]atomic.Int64
	otherTotals sync.Map // endpoint name -> *atomic.Int64
	perApp      sync.Map // ruleKey -> *atomic.Int64
}

// knownEndpoints lists the served endpoints; its order indexes
// Simulator.totals.
var knownEndpoints = [...]string{EndpointConversation, EndpointConcurrency, EndpointSessions, EndpointStop, EndpointStopAll}

func endpointIndex(name string) int {
	for i, e := range knownEndpoints {
		if e == name {
			return i
		}
	}
	return -1
}

type appState struct {
	settings atomic.Pointer[App]

	mu     sync.Mutex
	convs  map[string][]byte        // conversation ID -> encoded Conversation
	convID []string                 // conversation IDs in insertion order
	order  []*sessionState          // sessions in start order; may hold ended ones
	active map[string]*sessionState // active sessions by ID
	snap   []Session                // active sessions in start order; nil when stale
}

type sessionState struct {
	Session
	ended bool
}

// New returns an empty Simulator: no apps, no latency, session list shape
// ShapeArray.
func New(opts ...Option) *Simulator {
	s := &Simulator{
		now:       time.Now,
		latencies: make(map[ruleKey]time.Duration),
	}
	for _, o := range opts {
		o(s)
	}
	s.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithTimeFunc(s.now),
		jwt.WithExpirationRequired(),
	)
	return s
}

func (s *Simulator) app(id string) *appState {
	v, ok := s.apps.Load(id)
	if !ok {
		return nil
	}
	return v.(*appState)
}

// AddApp registers an application. If an app with that ID exists, its
// key, corp ID and allowance are replaced; its conversations and sessions
// are kept.
func (s *Simulator) AddApp(a App) {
	cp := a
	if st := s.app(a.ID); st != nil {
		st.settings.Store(&cp)
		return
	}
	st := &appState{
		convs:  make(map[string][]byte),
		active: make(map[string]*sessionState),
	}
	st.settings.Store(&cp)
	if prev, loaded := s.apps.LoadOrStore(a.ID, st); loaded {
		prev.(*appState).settings.Store(&cp)
	}
}

// SetAllowance changes the concurrency allowance of an app. Lowering it
// below the number of active sessions ends no session.
func (s *Simulator) SetAllowance(appID string, n int) error {
	st := s.app(appID)
	if st == nil {
		return ErrUnknownApp
	}
	for {
		old := st.settings.Load()
		cp := *old
		cp.Allowance = n
		if st.settings.CompareAndSwap(old, &cp) {
			return nil
		}
	}
}

// AddConversation stores a conversation of an app, replacing one with the
// same ID. An empty CorpID is filled with the app's. The record is copied:
// later changes to c have no effect.
func (s *Simulator) AddConversation(appID string, c Conversation) error {
	st := s.app(appID)
	if st == nil {
		return ErrUnknownApp
	}
	if c.ID == "" {
		return ErrInvalidConversation
	}
	if c.CorpID == "" {
		c.CorpID = st.settings.Load().CorpID
	}
	b := c.record()
	st.mu.Lock()
	if _, ok := st.convs[c.ID]; !ok {
		st.convID = append(st.convID, c.ID)
	}
	st.convs[c.ID] = b
	st.mu.Unlock()
	return nil
}

func (st *appState) conversation(id string) []byte {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.convs[id]
}

func (st *appState) conversationIDs() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]string(nil), st.convID...)
}

// StartSession starts a session of an app on a conversation and returns
// its new session ID. It fails with ErrUnknownApp or, when the app already
// has as many active sessions as its allowance, ErrAllowanceExhausted. The
// conversation ID is not checked against the app's conversations.
func (s *Simulator) StartSession(appID, conversationID string) (string, error) {
	return s.startSession(appID, conversationID, s.now(), true)
}

// ForceSession is StartSession without the allowance check, so that the
// number of active sessions can exceed the allowance.
func (s *Simulator) ForceSession(appID, conversationID string) (string, error) {
	return s.startSession(appID, conversationID, s.now(), false)
}

// StartSessionAt is StartSession with the start time the session's record
// carries: a session started hours ago (by a kiosk that never hung up, say)
// can be made at once.
func (s *Simulator) StartSessionAt(appID, conversationID string, start time.Time) (string, error) {
	return s.startSession(appID, conversationID, start, true)
}

func (s *Simulator) startSession(appID, conversationID string, start time.Time, limit bool) (string, error) {
	st := s.app(appID)
	if st == nil {
		return "", ErrUnknownApp
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if limit && len(st.active) >= st.settings.Load().Allowance {
		return "", ErrAllowanceExhausted
	}
	id := newSessionID() // 122 random bits: collisions are not a concern
	ss := &sessionState{Session: Session{ID: id, ConversationID: conversationID, Start: start}}
	st.active[id] = ss
	st.order = append(st.order, ss)
	st.snap = nil
	return id, nil
}

// EndSession ends an active session of an app. It reports whether the
// session was active.
func (s *Simulator) EndSession(appID, sessionID string) bool {
	st := s.app(appID)
	if st == nil {
		return false
	}
	return st.end(sessionID)
}

func (st *appState) end(sessionID string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	ss, ok := st.active[sessionID]
	if !ok {
		return false
	}
	ss.ended = true
	delete(st.active, sessionID)
	st.snap = nil
	// Compact the start-ordered slice once ended sessions dominate it.
	if len(st.order) > 64 && len(st.order) > 2*len(st.active) {
		kept := make([]*sessionState, 0, len(st.active)+len(st.active)/2+8)
		for _, o := range st.order {
			if !o.ended {
				kept = append(kept, o)
			}
		}
		st.order = kept
	}
	return true
}

// endAll ends every active session and returns how many there were.
func (st *appState) endAll() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := len(st.active)
	for _, o := range st.order {
		o.ended = true
	}
	clear(st.active)
	st.order = nil
	st.snap = nil
	return n
}

// list returns the active sessions in start order. The returned slice is
// shared and must not be modified.
func (st *appState) list() []Session {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.snap == nil {
		snap := make([]Session, 0, len(st.active))
		for _, o := range st.order {
			if !o.ended {
				snap = append(snap, o.Session)
			}
		}
		st.snap = snap
	}
	return st.snap
}

func (st *appState) inUse() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.active)
}

// Sessions returns the active sessions of an app in start order (nil for an
// unknown app).
func (s *Simulator) Sessions(appID string) []Session {
	st := s.app(appID)
	if st == nil {
		return nil
	}
	return append([]Session(nil), st.list()...)
}

// InUse returns the number of active sessions of an app (0 for an unknown
// app).
func (s *Simulator) InUse(appID string) int {
	st := s.app(appID)
	if st == nil {
		return 0
	}
	return st.inUse()
}

// appIDs returns the registered app IDs, sorted.
func (s *Simulator) appIDs() []string {
	var ids []string
	s.apps.Range(func(k, _ any) bool {
		ids = append(ids, k.(string))
		return true
	})
	sort.Strings(ids)
	return ids
}

// newSessionID returns a random UUID-formatted (version 4) hex string.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

// Shape selects how getconcurrentList shapes its data.
type Shape int32

// Session list shapes.
const (
	ShapeArray   Shape = iota // data is a bare array of session records
	ShapeList                 // data is {"list":[...],"total":n}
	ShapeRecords              // data is {"records":[...],"total":n}
	ShapeRows                 // data is {"rows":[...],"total":n}
	ShapeNull                 // data is null, whatever the sessions
)

// SetSessionListShape selects the data shape of getconcurrentList for all
// apps.
func (s *Simulator) SetSessionListShape(shape Shape) {
	s.shape.Store(int32(shape))
}

// SetSessionConversationIDs selects whether session records name their
// conversation (conversationId, the default) or not: the public reference
// does not document the records, so a platform may leave it out.
func (s *Simulator) SetSessionConversationIDs(on bool) {
	s.noConversationIDs.Store(!on)
}

// Requests returns how many requests reached the handler for an endpoint
// name (all apps, faulted or not).
func (s *Simulator) Requests(endpoint string) int64 {
	if i := endpointIndex(endpoint); i >= 0 {
		return s.totals[i].Load()
	}
	if v, ok := s.otherTotals.Load(endpoint); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// RequestsFor returns how many requests reached the handler for an app and
// an endpoint. A request is attributed to the appId query parameter when
// present, else to the appId claim of its token (verified or not).
func (s *Simulator) RequestsFor(appID, endpoint string) int64 {
	if v, ok := s.perApp.Load(ruleKey{appID, endpoint}); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// ResetCounts sets all request counts to zero.
func (s *Simulator) ResetCounts() {
	for i := range s.totals {
		s.totals[i].Store(0)
	}
	zero := func(_, v any) bool {
		v.(*atomic.Int64).Store(0)
		return true
	}
	s.otherTotals.Range(zero)
	s.perApp.Range(zero)
}

func (s *Simulator) count(appID, endpoint string) {
	if i := endpointIndex(endpoint); i >= 0 {
		s.totals[i].Add(1)
	} else {
		counter(&s.otherTotals, endpoint).Add(1)
	}
	counter(&s.perApp, ruleKey{appID, endpoint}).Add(1)
}

func counter(m *sync.Map, key any) *atomic.Int64 {
	if v, ok := m.Load(key); ok {
		return v.(*atomic.Int64)
	}
	v, _ := m.LoadOrStore(key, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// MintToken returns an HS256 JWT signed with appKey and carrying the claims
// appId, iat and exp, as the platform expects.
func MintToken(appID, appKey string, iat, exp time.Time) (string, error) {
	claims := jwt.MapClaims{
		"appId": appID,
		"iat":   iat.Unix(),
		"exp":   exp.Unix(),
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(appKey))
}
