package collector_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/collector"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// The fault matrix: for each fault, one faulty app among fmApps served by
// the simulator, scraped fmScrapes times through the real /metrics handler
// with Prometheus' scrape-timeout header. Every row checks that /metrics
// answers within the scrape timeout, that the faulty app shows duix_up 0
// with the expected reason per endpoint in duix_scrape_errors_total, that
// every other app's series are exact, that no goroutine outlives the row
// and that the heap comes back. The table is printed with t.Log (go test
// -v -run TestFaultMatrix ./collector/) and, when DUIX_FAULT_MATRIX_OUT
// names a file, written there.
const (
	fmApps    = 20
	fmFaulty  = 7 // index of the faulty app
	fmScrapes = 2
	// fmAPITimeout is generous, so that a healthy app's calls never run
	// out of it on a busy machine; the rows whose fault is a platform that
	// takes too long use fmShortTimeout.
	fmAPITimeout    = 3 * time.Second
	fmShortTimeout  = time.Second
	fmScrapeTimeout = 10 * time.Second
	fmOffset        = 500 * time.Millisecond
	fmMaxBody       = 1 << 20 // max_response_bytes: 1 MiB
	// Retained heap after a row, once collected, may exceed the heap
	// before it by at most this much.
	fmMaxRetained = 8 << 20
	// The live heap while a row runs may exceed the heap before it by at
	// most this much (20 apps' answers and expositions)...
	fmMaxPeak = 32 << 20
	// ... except while an oversized body without Content-Length is read:
	// encoding/json buffers the value being decoded, so each such request
	// may hold a few times max_response_bytes until the cap stops it; the
	// faulty app makes 4 requests at once (2 conversations).
	fmOversizedPeak = 4*4*fmMaxBody + fmMaxPeak
)

var fmEndpoints = []string{client.EndpointConcurrency, client.EndpointSessions, client.EndpointConversation}

type faultRow struct {
	name string
	how  string
	// Exactly one of fault, latency and refused is set.
	fault   *platformtest.Fault
	latency time.Duration
	refused bool
	// chunked strips the Content-Length of the faulty app's answers, so
	// that the body's size is only known by reading it.
	chunked bool
	// maxPeak bounds the live heap while the row runs, over the heap
	// before it (0: fmMaxPeak).
	maxPeak int64
	// apiTimeout replaces fmAPITimeout (0: keep it).
	apiTimeout time.Duration
	// orTimeout accepts timeout in place of the wanted reason, for a fault
	// whose outcome depends on the machine's speed.
	orTimeout bool
	// want is the reason per endpoint; "" means the call succeeds.
	want map[string]string
}

func allReasons(r string) map[string]string {
	m := map[string]string{}
	for _, ep := range fmEndpoints {
		m[ep] = r
	}
	return m
}

func faultRows() []faultRow {
	f := func(k platformtest.FaultKind) *platformtest.Fault { return &platformtest.Fault{Kind: k} }
	return []faultRow{
		{name: "upstream timeout", how: "no answer for 30 s (api.timeout 1 s)", latency: 30 * time.Second, apiTimeout: fmShortTimeout, want: allReasons(client.ReasonTimeout)},
		{name: "connection refused", how: "base_url on a closed loopback port (own exporter)", refused: true, want: allReasons(client.ReasonNetwork)},
		{name: "connection reset mid-body", how: "headers and half the body, then TCP RST", fault: f(platformtest.FaultResetConnection), want: allReasons(client.ReasonNetwork)},
		{name: "401", how: "HTTP 401, code 401", fault: f(platformtest.FaultUnauthorized401), want: allReasons(client.ReasonAuth)},
		{name: "403", how: "HTTP 403, code 403", fault: f(platformtest.FaultForbidden403), want: allReasons(client.ReasonAuth)},
		{name: "429", how: "HTTP 429, Retry-After 60 s", fault: &platformtest.Fault{Kind: platformtest.FaultRateLimit429, RetryAfter: time.Minute}, want: allReasons(client.ReasonRateLimited)},
		{name: "500", how: "HTTP 500, JSON envelope", fault: f(platformtest.FaultHTTP500), want: allReasons(client.ReasonHTTP)},
		{name: "502 HTML", how: "HTTP 502, nginx HTML page", fault: f(platformtest.FaultHTML502), want: allReasons(client.ReasonHTTP)},
		{name: "truncated JSON", how: "HTTP 200, first half of the body", fault: f(platformtest.FaultTruncatedJSON), want: allReasons(client.ReasonDecode)},
		{name: "wrong value types", how: "numbers as strings, objects as arrays", fault: f(platformtest.FaultWrongTypes), want: allReasons(client.ReasonDecode)},
		{name: "success=false", how: "HTTP 200, success false, code 500", fault: f(platformtest.FaultSuccessFalse), want: allReasons(client.ReasonAPI)},
		{name: "null data", how: "success true, data null (an empty session list is valid)", fault: f(platformtest.FaultNullData), want: map[string]string{
			client.EndpointConcurrency: client.ReasonDecode, client.EndpointSessions: "", client.EndpointConversation: client.ReasonDecode}},
		{name: "oversized body", how: "valid JSON of 8 MiB with its Content-Length (max_response_bytes 1 MiB)", fault: &platformtest.Fault{Kind: platformtest.FaultOversizedBody, Bytes: 8 << 20}, want: allReasons(client.ReasonDecode)},
		{name: "oversized body, chunked", how: "the same without Content-Length: read up to the cap", fault: &platformtest.Fault{Kind: platformtest.FaultOversizedBody, Bytes: 8 << 20}, chunked: true,
			want: allReasons(client.ReasonDecode), maxPeak: fmOversizedPeak, orTimeout: true,
			// With the race detector on a busy machine, the capped read
			// may reach the cap or run out of time.
		},
		{name: "slow drip", how: "headers at once, body in 10 chunks 1 s apart", fault: &platformtest.Fault{Kind: platformtest.FaultSlowBody, Delay: time.Second}, apiTimeout: fmShortTimeout, want: allReasons(client.ReasonTimeout)},
	}
}

// fmApp describes app i: its allowance, sessions and conversations differ
// from app to app so that a mix-up between apps shows.
type fmApp struct {
	name, id, key, corp string
	allowance           int
	convs               []string
	maxConv             map[string]int
	sessions            map[string]int // per conversation ("" for none)
}

func newFMApp(i int) fmApp {
	a := fmApp{
		name:      fmt.Sprintf("app-%02d", i),
		id:        fmt.Sprintf("17900000000000%05d", i),
		key:       fmt.Sprintf("fm-key-%02d-3c1d9e", i),
		corp:      fmt.Sprintf("corp-%02d", i),
		allowance: 10 + i,
		maxConv:   map[string]int{},
		sessions:  map[string]int{},
	}
	for j := 1; j <= 2; j++ {
		c := fmt.Sprintf("%d%02d", j, i)
		a.convs = append(a.convs, c)
		a.maxConv[c] = i%5 + j
		a.sessions[c] = (i + j) % 4
	}
	a.sessions[""] = i % 3
	return a
}

func (a fmApp) totalSessions() int {
	n := 0
	for _, s := range a.sessions {
		n += s
	}
	return n
}

// fmEnv is one row's platform and exporter(s).
type fmEnv struct {
	sim     *simulator.Simulator
	faults  *platformtest.Faults
	simSrv  *httptest.Server
	apps    []fmApp
	servers []*httptest.Server // /metrics of each exporter
}

func fmConfig(row faultRow, baseURL string, apps []fmApp) *config.Config {
	cfg := &config.Config{API: config.DefaultAPI}
	cfg.API.BaseURL = baseURL
	cfg.API.Timeout = model.Duration(fmAPITimeout)
	if row.apiTimeout > 0 {
		cfg.API.Timeout = model.Duration(row.apiTimeout)
	}
	cfg.API.MaxResponseBytes = fmMaxBody
	for _, a := range apps {
		cfg.Apps = append(cfg.Apps, config.App{
			Name: a.name, AppID: a.id, AppKey: configSecret(a.key),
			TokenTTL: model.Duration(30 * time.Minute), Conversations: a.convs,
		})
	}
	return cfg
}

func fmExporter(t *testing.T, cfg *config.Config) *httptest.Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	exp := collector.New(collector.Options{Metrics: client.NewMetrics(reg)})
	require.NoError(t, exp.Register(reg))
	require.NoError(t, exp.Apply(cfg))
	return httptest.NewServer(handlerFor(exp, reg, fmOffset))
}

func newFMEnv(t *testing.T, row faultRow) *fmEnv {
	t.Helper()
	e := &fmEnv{sim: simulator.New()}
	e.faults = platformtest.New(e.sim)
	var h http.Handler = e.faults
	if row.chunked {
		faulty := newFMApp(fmFaulty)
		h = stripLength(e.faults, faulty.id, faulty.convs)
	}
	e.simSrv = httptest.NewServer(h)
	for i := range fmApps {
		a := newFMApp(i)
		e.apps = append(e.apps, a)
		e.sim.AddApp(simulator.App{ID: a.id, Key: a.key, CorpID: a.corp, Allowance: a.allowance})
		for _, c := range a.convs {
			require.NoError(t, e.sim.AddConversation(a.id, simulator.NewConversation(c, "conversation "+c, a.maxConv[c])))
		}
		for c, n := range a.sessions {
			for range n {
				_, err := e.sim.StartSession(a.id, c)
				require.NoError(t, err)
			}
		}
	}
	base := e.simSrv.URL + simulator.BasePath
	faulty := e.apps[fmFaulty]
	switch {
	case row.refused:
		// The base URL is shared by every app, so a refused connection
		// is given to the faulty app through a second exporter whose
		// base_url is a loopback port nobody listens on.
		healthy := append(append([]fmApp(nil), e.apps[:fmFaulty]...), e.apps[fmFaulty+1:]...)
		e.servers = append(e.servers,
			fmExporter(t, fmConfig(row, base, healthy)),
			fmExporter(t, fmConfig(row, "http://"+closedPort(t)+simulator.BasePath, []fmApp{faulty})))
	case row.fault != nil:
		e.faults.SetFault(faulty.id, "", *row.fault)
		e.servers = append(e.servers, fmExporter(t, fmConfig(row, base, e.apps)))
	default:
		e.sim.SetLatency(faulty.id, "", row.latency)
		e.servers = append(e.servers, fmExporter(t, fmConfig(row, base, e.apps)))
	}
	return e
}

// stripLength removes the Content-Length of the answers about appID and
// its conversations, so that they go out chunked.
func stripLength(next http.Handler, appID string, convs []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("appId") == appID || slices.Contains(convs, q.Get("conversationId")) {
			w = noLength{w}
		}
		next.ServeHTTP(w, r)
	})
}

type noLength struct{ http.ResponseWriter }

func (n noLength) WriteHeader(code int) {
	n.Header().Del("Content-Length")
	n.ResponseWriter.WriteHeader(code)
}

func (e *fmEnv) close() {
	for _, s := range e.servers {
		s.Close()
	}
	e.simSrv.Close()
}

// closedPort returns a loopback address on which nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	// A port bound and never listened on refuses connections, and no other
	// process can take it while the test holds it (one closed at once could).
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}

// scrape GETs /metrics of every exporter of the row at once, as Prometheus
// would with fmScrapeTimeout, and merges the samples. It returns the
// slowest answer's time.
func (e *fmEnv) scrape(t *testing.T) (samples, time.Duration) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 2 * fmScrapeTimeout}
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		slowest time.Duration
		all     = samples{}
	)
	for _, srv := range e.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
			if !assert.NoError(t, err) {
				return
			}
			req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", fmt.Sprint(fmScrapeTimeout.Seconds()))
			start := time.Now()
			resp, err := hc.Do(req)
			if !assert.NoError(t, err) {
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			took := time.Since(start)
			if !assert.NoError(t, err) || !assert.Equal(t, http.StatusOK, resp.StatusCode, string(body)) {
				return
			}
			s, err := parseSamples(string(body))
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			slowest = max(slowest, took)
			for k, v := range s {
				all[k] = v
			}
		}()
	}
	wg.Wait()
	return all, slowest
}

// samples maps "name{l1=v1,l2=v2}" (labels sorted by name) to the value.
type samples map[string]float64

func sampleKey(name string, labels ...string) string {
	return name + "{" + strings.Join(labels, ",") + "}"
}

func parseSamples(body string) (samples, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	out := samples{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() { // sorted by name
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			out[sampleKey(name, labels...)] = m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return out, nil
}

// checkHealthy requires every series of a healthy app to be exact.
func checkHealthy(t *testing.T, s samples, a fmApp) {
	t.Helper()
	app := "app=" + a.name
	want := map[string]float64{
		sampleKey("duix_up", app):                                          1,
		sampleKey("duix_app_concurrency_limit", app):                       float64(a.allowance),
		sampleKey("duix_app_concurrency_in_use", app):                      float64(a.totalSessions()),
		sampleKey("duix_app_active_sessions", app):                         float64(a.totalSessions()),
		sampleKey("duix_app_info", app, "app_id="+a.id, "corp_id="+a.corp): 1,
		sampleKey("duix_app_sessions_without_conversation", app):           float64(a.sessions[""]),
		sampleKey("duix_app_errors_total", app):                            0,
	}
	for _, c := range a.convs {
		cid := "conversation_id=" + c
		want[sampleKey("duix_conversation_max_concurrent", app, cid)] = float64(a.maxConv[c])
		// Counts per conversation are known only when every session
		// names its conversation.
		if a.sessions[""] == 0 {
			want[sampleKey("duix_conversation_active_sessions", app, cid)] = float64(a.sessions[c])
		}
	}
	for k, v := range want {
		got, ok := s[k]
		if assert.True(t, ok, "healthy %s: %s is served", a.name, k) {
			assert.Equal(t, v, got, "healthy %s: %s", a.name, k)
		}
	}
	// Nothing else about the app: no stray conversations, no rate limit.
	n := 0
	for k := range s {
		if strings.Contains(k, "{"+app+",") || strings.Contains(k, "{"+app+"}") {
			n++
		}
	}
	// want, plus conversation_info and the refresh timestamp per
	// conversation, plus the scrape duration; no error series.
	if !assert.Equal(t, len(want)+2*len(a.convs)+1, n, "healthy %s: number of series", a.name) {
		for k, v := range s {
			if strings.Contains(k, "{"+app+",") && strings.Contains(k, "reason") {
				t.Log(k, v)
			}
		}
	}
}

// checkFaulty requires duix_up 0 and the expected reasons, and returns the
// failed calls seen by reason, for the table.
func checkFaulty(t *testing.T, s samples, a fmApp, row faultRow) string {
	t.Helper()
	app := "app=" + a.name
	assert.Equal(t, 0.0, s[sampleKey("duix_up", app)], "faulty app is down")
	_, ok := s[sampleKey("duix_up", app)]
	assert.True(t, ok, "faulty app still has duix_up")
	// Failed calls by reason: getconcurrentNumber and getconcurrentList
	// are called in every scrape; conversation details once per
	// conversation, then retried after a minute.
	want := map[string]float64{}
	for _, ep := range fmEndpoints {
		calls := fmScrapes
		if ep == client.EndpointConversation {
			calls = len(a.convs)
		}
		if r := row.want[ep]; r != "" {
			want[r] += float64(calls)
		}
	}
	got := map[string]float64{}
	var seen []string
	for _, r := range []string{client.ReasonTimeout, client.ReasonHTTP, client.ReasonAPI, client.ReasonDecode, client.ReasonAuth, client.ReasonNetwork, client.ReasonRateLimited} {
		if v, ok := s[sampleKey("duix_scrape_errors_total", app, "reason="+r)]; ok {
			got[r] = v
			seen = append(seen, fmt.Sprintf("%s %g", r, v))
		}
	}
	total := 0.0
	for _, v := range got {
		total += v
	}
	assert.Equal(t, total, s[sampleKey("duix_app_errors_total", app)], "every reason together")
	if row.orTimeout {
		// On a slow machine the capped read may run out of time first.
		assert.Equal(t, want[row.want[client.EndpointConcurrency]], got[row.want[client.EndpointConcurrency]]+got[client.ReasonTimeout], "failed calls")
	} else {
		assert.Equal(t, want, got, "failed calls by reason")
	}
	if row.want[client.EndpointSessions] == "" {
		assert.Equal(t, 0.0, s[sampleKey("duix_app_active_sessions", app)])
	} else {
		_, ok := s[sampleKey("duix_app_active_sessions", app)]
		assert.False(t, ok, "no session count when the list failed")
	}
	_, ok = s[sampleKey("duix_app_concurrency_limit", app)]
	assert.False(t, ok, "no allowance when getconcurrentNumber failed")
	return strings.Join(seen, ", ")
}

// heapWatch samples the live heap until stopped and reports the peak.
type heapWatch struct {
	stop chan struct{}
	done chan uint64
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

func liveHeap() uint64 {
	s := append([]metrics.Sample(nil), heapSample...)
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func collectedHeap() uint64 {
	runtime.GC()
	runtime.GC()
	return liveHeap()
}

func watchHeap() *heapWatch {
	w := &heapWatch{stop: make(chan struct{}), done: make(chan uint64, 1)}
	go func() {
		peak := liveHeap()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				w.done <- max(peak, liveHeap())
				return
			case <-tick.C:
				peak = max(peak, liveHeap())
			}
		}
	}()
	return w
}

func (w *heapWatch) peak() uint64 {
	close(w.stop)
	return <-w.done
}

type fmResult struct {
	row          faultRow
	up           string
	healthyExact bool
	reasons      string
	slowest      time.Duration
	leak         error
	peak         int64
	retained     int64
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

func TestFaultMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault matrix takes several seconds")
	}
	var results []fmResult
	for _, row := range faultRows() {
		t.Run(row.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			before := collectedHeap()
			w := watchHeap()

			e := newFMEnv(t, row)
			res := fmResult{row: row}
			var last samples
			for i := range fmScrapes {
				s, took := e.scrape(t)
				res.slowest = max(res.slowest, took)
				require.Less(t, took, fmScrapeTimeout, "scrape %d answered within the scrape timeout", i+1)
				last = s
			}
			for i, a := range e.apps {
				if i != fmFaulty {
					checkHealthy(t, last, a)
				}
			}
			res.healthyExact = !t.Failed()
			res.up = fmt.Sprint(last[sampleKey("duix_up", "app="+e.apps[fmFaulty].name)])
			res.reasons = checkFaulty(t, last, e.apps[fmFaulty], row)
			e.close()
			last = nil

			res.peak = int64(w.peak()) - int64(before)
			res.retained = int64(collectedHeap()) - int64(before)
			res.leak = goleak.Find(ignore)
			assert.NoError(t, res.leak, "no goroutine outlives the row")
			assert.Less(t, res.retained, int64(fmMaxRetained), "retained heap after the row: %s MiB", mib(res.retained))
			maxPeak := row.maxPeak
			if maxPeak == 0 {
				maxPeak = fmMaxPeak
			}
			assert.Less(t, res.peak, maxPeak, "live heap during the row: %s MiB over the start", mib(res.peak))
			results = append(results, res)
		})
	}
	table := fmTable(results)
	t.Log("\n" + table)
	if path := os.Getenv("DUIX_FAULT_MATRIX_OUT"); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(table), 0o600))
	}
}

func fmTable(results []fmResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "One faulty app among %d, %d scrapes of /metrics per fault (scrape timeout %s, api.timeout %s, %s for a platform that takes too long). "+
		"Errors: the faulty app's duix_scrape_errors_total by reason after the scrapes, all endpoints together "+
		"(its 2 conversations are fetched once each; a failed one is retried after a minute).\n\n",
		fmApps, fmScrapes, fmScrapeTimeout, fmAPITimeout, fmShortTimeout)
	b.WriteString("| fault | injected as | duix_up | duix_scrape_errors_total by reason | slowest /metrics | other 19 apps | goroutines leaked | heap peak / retained (MiB) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		leak := "none"
		if r.leak != nil {
			leak = "LEAK"
		}
		exact := "exact"
		if !r.healthyExact {
			exact = "WRONG"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s / %s |\n",
			r.row.name, r.row.how, r.up, r.reasons,
			r.slowest.Round(10*time.Millisecond), exact, leak, mib(max(r.peak, 0)), mib(max(r.retained, 0)))
	}
	return b.String()
}
