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

// Churn makes calls start and end on every app until ctx is done, with
// lengths like real calls: at each tick of every, an app may start one
// session, which lasts 20 to 200 ticks (1 to 10 minutes at the 3 s of the
// simulator command); about one session in 40 never ends (a kiosk that did
// not hang up), at most one per app at a time. The rate of new calls drifts
// towards a target level re-drawn now and then between 0 and the
// allowance, so the allowance is reached from time to time, never
// exceeded. New sessions are spread over the app's conversations. A nil
// rng is replaced by a randomly seeded one; rng is used by Churn only and
// must not be shared with other goroutines.
func (s *Simulator) Churn(ctx context.Context, every time.Duration, rng *rand.Rand) {
	if every <= 0 {
		every = time.Second
	}
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())) // #nosec G404 -- simulated session churn, not a secret
	}
	c := churn{s: s, rng: rng, apps: map[string]*churnApp{}}
	t := time.NewTicker(every)
	defer t.Stop()
	for tick := 0; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, id := range s.appIDs() {
			c.step(id, tick)
		}
	}
}

// Lengths of churned calls, in ticks.
const (
	churnMinTicks  = 20
	churnMaxTicks  = 200
	churnMeanTicks = (churnMinTicks + churnMaxTicks) / 2
	churnStuckOdds = 40 // one new call in this many never ends
)

type churn struct {
	s    *Simulator
	rng  *rand.Rand
	apps map[string]*churnApp
}

// churnApp is what Churn plans for one app: a target level, and the tick
// at which each of its calls ends (-1: never).
type churnApp struct {
	target int
	ends   map[string]int
	stuck  string // the session that never ends, if any
}

func (c *churn) step(appID string, tick int) {
	st := c.s.app(appID)
	if st == nil {
		return
	}
	a := c.apps[appID]
	if a == nil {
		a = &churnApp{target: -1, ends: map[string]int{}}
		c.apps[appID] = a
	}
	// Calls that are due end; sessions ended by someone else are forgotten;
	// sessions Churn did not start (the demo's first ones, or an operator's)
	// get a length of their own.
	active := map[string]bool{}
	for _, ss := range st.list() {
		active[ss.ID] = true
		end, planned := a.ends[ss.ID]
		switch {
		case !planned:
			a.ends[ss.ID] = tick + churnMinTicks + c.rng.IntN(churnMaxTicks-churnMinTicks+1)
		case end >= 0 && end <= tick:
			st.end(ss.ID)
			delete(active, ss.ID)
		}
	}
	for id := range a.ends {
		if !active[id] {
			delete(a.ends, id)
			if a.stuck == id {
				a.stuck = ""
			}
		}
	}
	allowance := st.settings.Load().Allowance
	if a.target < 0 || a.target > allowance || c.rng.IntN(churnMeanTicks) == 0 {
		switch {
		case allowance <= 0:
			a.target = 0
		case c.rng.IntN(4) == 0:
			a.target = allowance
		default:
			a.target = c.rng.IntN(allowance + 1)
		}
	}
	// Calls end at about inUse/mean per tick: below the target, start
	// more than that, so that the level follows the target closely.
	inUse := len(active)
	p := 1.0 / churnMeanTicks
	if inUse < a.target {
		p = float64(16*(a.target-inUse+1)) / churnMeanTicks
	}
	if inUse >= allowance || c.rng.Float64() >= p {
		return
	}
	convs := st.conversationIDs()
	conv := ""
	if len(convs) > 0 {
		conv = convs[c.rng.IntN(len(convs))]
	}
	id, err := c.s.StartSession(appID, conv)
	if err != nil {
		return
	}
	a.ends[id] = tick + churnMinTicks + c.rng.IntN(churnMaxTicks-churnMinTicks+1)
	if a.stuck == "" && c.rng.IntN(churnStuckOdds) == 0 {
		a.ends[id], a.stuck = -1, id
	}
}

// Listen serves s on a TCP listener at addr (for example "127.0.0.1:0")
// and returns the base URL of the API (http://host:port + BasePath) and a
// function that stops the server at once.
func (s *Simulator) Listen(addr string) (baseURL string, closeFn func(), err error) {
	return ListenHandler(addr, s)
}

// ListenHandler serves h, a Simulator or a handler wrapping one, as Listen
// does.
func ListenHandler(addr string, h http.Handler) (baseURL string, closeFn func(), err error) {
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
