package simulator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/config"
)

func TestNewDemo(t *testing.T) {
	sim, apps := NewDemo()
	require.Len(t, apps, 3)
	srv := httptest.NewServer(sim)
	defer srv.Close()

	names := map[string]bool{}
	for _, a := range apps {
		names[a.Name] = true
		assert.NotEmpty(t, a.AppID)
		assert.NotEmpty(t, a.AppKey)
		require.Len(t, a.Conversations, 2)
		assert.Positive(t, sim.InUse(a.AppID), "sessions already active")

		tok, err := MintToken(a.AppID, a.AppKey, time.Now(), time.Now().Add(time.Hour))
		require.NoError(t, err)
		get := func(ep, q string) map[string]any {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+BasePath+"/"+ep+"?"+q, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return decode(t, b)
		}
		d := get(EndpointConcurrency, "appId="+a.AppID)["data"].(map[string]any)
		assert.EqualValues(t, sim.InUse(a.AppID), d["userConcurrentNumber"])
		assert.Greater(t, d["totalConcurrentNumber"], d["userConcurrentNumber"])
		for _, c := range a.Conversations {
			m := get(EndpointConversation, "conversationId="+c)
			assert.Equal(t, "0", m["code"])
			conv := m["data"].(map[string]any)
			assert.Equal(t, c, conv["id"])
			assert.Positive(t, conv["maxConversation"])
		}
		assert.Len(t, get(EndpointSessions, "appId="+a.AppID)["data"], sim.InUse(a.AppID))
	}
	assert.True(t, names["support-desk"] && names["sales-avatar"] && names["museum-guide"])

	// Deterministic credentials.
	_, again := NewDemo()
	assert.Equal(t, apps, again)
}

func TestChurn(t *testing.T) {
	sim, apps := NewDemo()
	allowance := map[string]int{}
	for _, a := range apps {
		allowance[a.AppID] = sim.app(a.AppID).settings.Load().Allowance
	}

	// The steps Churn takes at each tick, taken here one by one with a
	// seeded generator: the outcome does not depend on timing.
	c := churn{s: sim, rng: rand.New(rand.NewPCG(1, 2)), apps: map[string]*churnApp{}}
	seen := map[string]map[int]bool{}
	for tick := range 2000 {
		for _, a := range apps {
			c.step(a.AppID, tick)
			n := sim.InUse(a.AppID)
			require.LessOrEqual(t, n, allowance[a.AppID], a.Name)
			if seen[a.AppID] == nil {
				seen[a.AppID] = map[int]bool{}
			}
			seen[a.AppID][n] = true
		}
	}
	for _, a := range apps {
		assert.Greater(t, len(seen[a.AppID]), 2, "%s: in-use moves", a.Name)
		assert.True(t, seen[a.AppID][allowance[a.AppID]], "%s reached its allowance", a.Name)
		convs := map[string]bool{}
		for _, s := range sim.Sessions(a.AppID) {
			convs[s.ConversationID] = true
		}
		for c := range convs {
			assert.Contains(t, a.Conversations, c)
		}
	}
}

func TestChurnRunsUntilItsContextEnds(t *testing.T) {
	sim, apps := NewDemo()
	before := map[string]int{}
	for _, a := range apps {
		before[a.AppID] = sim.InUse(a.AppID)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		sim.Churn(ctx, time.Millisecond, nil) // a nil rng is accepted
	}()
	// Wait, however long it takes, for a tick to change something.
	for moved := false; !moved; {
		time.Sleep(time.Millisecond)
		for _, a := range apps {
			moved = moved || sim.InUse(a.AppID) != before[a.AppID]
		}
	}
	cancel()
	<-stopped
}

func TestListen(t *testing.T) {
	sim, apps := NewDemo()
	base, closeFn, err := sim.Listen("127.0.0.1:0")
	require.NoError(t, err)
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+`+BasePath+`$`, base)

	a := apps[0]
	tok, _ := MintToken(a.AppID, a.AppKey, time.Now(), time.Now().Add(time.Hour))
	req, _ := http.NewRequest(http.MethodGet, base+"/"+EndpointConcurrency+"?appId="+a.AppID, nil)
	req.Header.Set("token", tok)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var env struct {
		Code    string `json:"code"`
		Success bool   `json:"success"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
	resp.Body.Close()
	assert.Equal(t, "200", env.Code)
	assert.True(t, env.Success)

	closeFn()
	closeFn() // idempotent
	_, err = http.Get(base + "/" + EndpointConcurrency)
	assert.Error(t, err)

	_, _, err = sim.Listen("256.0.0.1:bad")
	assert.Error(t, err)

	base, closeFn, err = sim.Listen(":0")
	require.NoError(t, err)
	defer closeFn()
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+`, base)
}

func benchSim(b *testing.B, apps int) (*Simulator, []string) {
	b.Helper()
	sim := New()
	toks := make([]string, apps)
	now := time.Now()
	for i := range apps {
		id := fmt.Sprintf("app-%04d", i)
		sim.AddApp(App{ID: id, Key: "key-" + id, CorpID: "corp", Allowance: 10})
		_, _ = sim.StartSession(id, "c")
		toks[i], _ = MintToken(id, "key-"+id, now, now.Add(time.Hour))
	}
	return sim, toks
}

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkScrape1000Apps measures one scrape's worth of handler calls:
// concurrency and session list for 1000 apps, in parallel.
func BenchmarkScrape1000Apps(b *testing.B) {
	sim, toks := benchSim(b, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &discardWriter{h: http.Header{}}
		i := 0
		for pb.Next() {
			app := i % len(toks)
			ep := EndpointConcurrency
			if i%2 == 1 {
				ep = EndpointSessions
			}
			req := httptest.NewRequest(http.MethodGet, BasePath+"/"+ep+"?appId="+fmt.Sprintf("app-%04d", app), nil)
			req.Header.Set("Authorization", "Bearer "+toks[app])
			clear(w.h)
			sim.ServeHTTP(w, req)
			i++
		}
	})
}

// BenchmarkList100k lists 100 000 sessions of one app.
func BenchmarkList100k(b *testing.B) {
	sim := New()
	sim.AddApp(App{ID: "big", Key: "k", Allowance: 100000})
	for range 100000 {
		_, _ = sim.StartSession("big", "conv")
	}
	tok, _ := MintToken("big", "k", time.Now(), time.Now().Add(time.Hour))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest(http.MethodGet, BasePath+"/"+EndpointSessions+"?appId=big", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		sim.ServeHTTP(&discardWriter{h: http.Header{}}, req)
	}
}

// A configuration written at a relative path names key files that it finds:
// the exporter reads them relative to the configuration's own directory.
func TestWriteConfigAtARelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	require.NoError(t, os.Mkdir("out", 0o700))
	_, apps := NewDemo()
	require.NoError(t, WriteConfig(filepath.Join("out", "duix.yml"), "http://127.0.0.1:1"+BasePath, apps))

	cfg, err := config.Load(filepath.Join("out", "duix.yml"))
	require.NoError(t, err)
	require.Len(t, cfg.Apps, len(apps))
	for i, a := range apps {
		key, err := os.ReadFile(cfg.Apps[i].AppKeyFile)
		require.NoError(t, err, a.Name)
		assert.Equal(t, a.AppKey+"\n", string(key))
	}
}
