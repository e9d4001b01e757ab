package simulator

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DemoApp describes one application of the demo platform, with what a
// client needs to query it.
type DemoApp struct {
	Name          string
	AppID         string
	AppKey        string
	Conversations []string // conversation IDs of the app
}

type demoSpec struct {
	name      string
	appID     string
	allowance int
	active    int
	convs     []demoConv
}

type demoConv struct {
	id, name string
	max      int
}

var demoSpecs = []demoSpec{
	{"support-desk", "1790000000000000101", 10, 3, []demoConv{
		{"1081", "售后客服", 6},
		{"1082", "技术支持", 4},
	}},
	{"sales-avatar", "1790000000000000202", 20, 8, []demoConv{
		{"2081", "新品导购", 12},
		{"2082", "会员顾问", 8},
	}},
	{"museum-guide", "1790000000000000303", 5, 2, []demoConv{
		{"3081", "展厅讲解", 3},
		{"3082", "儿童导览", 2},
	}},
}

// NewDemo returns a populated Simulator and the description of its apps:
// "support-desk" (allowance 10), "sales-avatar" (20) and "museum-guide"
// (5), each with two conversations and a few sessions already active. App
// IDs and keys are fixed, so a configuration file can name them.
func NewDemo() (*Simulator, []DemoApp) {
	s := New()
	apps := make([]DemoApp, 0, len(demoSpecs))
	for _, spec := range demoSpecs {
		key := "demo-key-" + spec.name + "-5f2c9a7e41d3b806"
		s.AddApp(App{ID: spec.appID, Key: key, CorpID: "corp-demo-" + spec.name, Allowance: spec.allowance})
		da := DemoApp{Name: spec.name, AppID: spec.appID, AppKey: key}
		for _, c := range spec.convs {
			conv := NewConversation(c.id, c.name, c.max)
			conv.UserID = "user-" + spec.name
			_ = s.AddConversation(spec.appID, conv)
			da.Conversations = append(da.Conversations, c.id)
		}
		for i := 0; i < spec.active; i++ {
			_, _ = s.StartSession(spec.appID, spec.convs[i%len(spec.convs)].id)
		}
		apps = append(apps, da)
	}
	return s, apps
}

// Churn changes the sessions of every app until ctx is done: at each tick
// of every, it starts or ends one session per app, drifting towards a
// target level that is re-drawn now and then between 0 and the allowance
// (so the allowance is reached from time to time, never exceeded). New
// sessions are spread over the app's conversations. A nil rng is replaced
// by a randomly seeded one; rng is used by Churn only and must not be
// shared with other goroutines.
func (s *Simulator) Churn(ctx context.Context, every time.Duration, rng *rand.Rand) {
	if every <= 0 {
		every = time.Second
	}
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())) // #nosec G404 -- simulated session churn, not a secret
	}
	targets := make(map[string]int)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, id := range s.appIDs() {
			s.churnApp(id, rng, targets)
		}
	}
}

func (s *Simulator) churnApp(appID string, rng *rand.Rand, targets map[string]int) {
	st := s.app(appID)
	if st == nil {
		return
	}
	allowance := st.settings.Load().Allowance
	target, ok := targets[appID]
	if !ok || target > allowance || rng.IntN(8) == 0 {
		if allowance <= 0 {
			target = 0
		} else if rng.IntN(4) == 0 {
			target = allowance
		} else {
			target = rng.IntN(allowance + 1)
		}
		targets[appID] = target
	}
	inUse := st.inUse()
	start := inUse < target
	if inUse == target || rng.IntN(5) == 0 { // some noise around the target
		start = rng.IntN(2) == 0
	}
	if start && inUse < allowance {
		convs := st.conversationIDs()
		conv := ""
		if len(convs) > 0 {
			conv = convs[rng.IntN(len(convs))]
		}
		_, _ = s.StartSession(appID, conv)
		return
	}
	if sessions := st.list(); len(sessions) > 0 {
		st.end(sessions[rng.IntN(len(sessions))].ID)
	}
}

// Listen serves s on a TCP listener at addr (for example "127.0.0.1:0")
// and returns the base URL of the API (http://host:port + BasePath) and a
// function that stops the server at once.
func (s *Simulator) Listen(addr string) (baseURL string, closeFn func(), err error) {
	return listen(addr, s)
}

// listen serves h as Listen does.
func listen(addr string, h http.Handler) (baseURL string, closeFn func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	tcp := ln.Addr().(*net.TCPAddr)
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1" // reachable for IPv4 and dual-stack listeners
	}
	baseURL = "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port)) + BasePath
	return baseURL, sync.OnceFunc(func() { _ = srv.Close() }), nil
}
