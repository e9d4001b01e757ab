// Command soak keeps duix_exporter busy for a while and checks that it stays
// correct and does not grow. It starts the simulator of the platform in
// this process on loopback (sessions coming and going, a few apps failing
// in a different way each), runs the real exporter binary against it, and
// sends it -scrapers concurrent scrapers for -duration: most scrape
// /metrics, some /probe?app=NAME, each with Prometheus' scrape-timeout
// header. It prints the scrapes made, the failed scrapes of healthy apps,
// latency percentiles, and the exporter's goroutines and RSS at the start,
// the middle and the end, and its peak RSS; then whether each bar is met.
// It exits 1 when a bar is missed and 2 when it cannot run.
//
// With -endless N, N more apps answer JSON bodies that never end (a string
// inside data, or a session list), and -gomemlimit and -max-peak-rss check
// that the exporter, run with the memory limit it ships with and its
// default settings, stays within it.
//
//	go run ./bench/soak -apps 200 -scrapers 50 -duration 60s
//	go run ./bench/soak -apps 20 -endless 3 -gomemlimit 115MiB -max-peak-rss 128 -duration 5s
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

type options struct {
	apps, faulty, endless, scrapers int
	probeShare                      float64
	duration                        time.Duration
	scrapeTimeout                   time.Duration
	binary, goMemLimit              string
	maxGoroutineGrowth              int
	maxRSSGrowth                    float64
	maxPeakRSS                      int64 // MiB; 0: no bar
}

// The faults given to the faulty apps, one each in turn: all answer at
// once, so that a faulty app never slows a scrape down.
var faults = []platformtest.Fault{
	{Kind: platformtest.FaultHTTP500},
	{Kind: platformtest.FaultHTML502},
	{Kind: platformtest.FaultTruncatedJSON},
	{Kind: platformtest.FaultUnauthorized401},
	{Kind: platformtest.FaultResetConnection},
	{Kind: platformtest.FaultSuccessFalse},
	{Kind: platformtest.FaultWrongTypes},
	{Kind: platformtest.FaultRateLimit429, RetryAfter: 2 * time.Second},
	{Kind: platformtest.FaultOversizedBody, Bytes: 64 << 20},
	{Kind: platformtest.FaultForbidden403},
}

// The faults of the -endless apps, one each in turn: answers that never
// end, until the exporter stops reading.
var endless = []platformtest.Fault{
	{Kind: platformtest.FaultEndlessString},
	{Kind: platformtest.FaultEndlessList},
}

func main() {
	var o options
	flag.IntVar(&o.apps, "apps", 200, "Number of apps.")
	flag.IntVar(&o.faulty, "faulty", 10, "How many of the apps fail, each with its own fault (HTTP 500, 502 HTML, truncated JSON, 401, reset, ...).")
	flag.IntVar(&o.endless, "endless", 0, "How many more apps answer JSON bodies that never end (a string inside data; a session list), one of each in turn.")
	flag.StringVar(&o.goMemLimit, "gomemlimit", "", "GOMEMLIMIT of the exporter (empty: none), for instance 115MiB, the setting of the Helm chart and kustomize for a 128Mi limit.")
	flag.Int64Var(&o.maxPeakRSS, "max-peak-rss", 0, "Bar: the exporter's peak RSS (VmHWM) in MiB over the whole run (0: not checked).")
	flag.IntVar(&o.scrapers, "scrapers", 50, "Concurrent scrapers, each scraping again as soon as it has an answer.")
	flag.Float64Var(&o.probeShare, "probe-share", 0.2, "Share of the scrapes that go to /probe?app=NAME (a random app) instead of /metrics.")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "How long the scrapers run.")
	flag.DurationVar(&o.scrapeTimeout, "scrape-timeout", 10*time.Second, "Scrape timeout sent in X-Prometheus-Scrape-Timeout-Seconds; a longer answer is a failed scrape.")
	flag.StringVar(&o.binary, "binary", "", "Exporter binary (empty: build it from the module with go build).")
	flag.IntVar(&o.maxGoroutineGrowth, "max-goroutine-growth", 20, "Bar: goroutines at rest after the run may exceed those at rest before it by at most this, beyond the pool of idle connections to the platform (2 goroutines each, up to api.max_concurrency of them).")
	flag.Float64Var(&o.maxRSSGrowth, "max-rss-growth", 1.25, "Bar: the highest RSS in the second half of the run may be at most this times the highest in the first half (plus 8 MiB).")
	flag.Parse()
	if o.apps < 1 || o.faulty < 0 || o.endless < 0 || o.faulty+o.endless >= o.apps || o.scrapers < 1 || o.duration <= 0 ||
		o.probeShare < 0 || o.probeShare > 1 || o.maxPeakRSS < 0 {
		fmt.Fprintln(os.Stderr, "soak: need -apps ≥ 1, -faulty and -endless ≥ 0, -faulty + -endless < -apps, -scrapers ≥ 1, -duration > 0, 0 ≤ -probe-share ≤ 1, -max-peak-rss ≥ 0")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

type app struct {
	name, id, key string
	faulty        bool
}

func run(ctx context.Context, o options) (bool, error) {
	dir, err := os.MkdirTemp("", "duix-soak-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)

	// The platform.
	sim := simulator.New()
	pf := platformtest.New(sim)
	apps := make([]app, o.apps)
	for i := range apps {
		a := app{name: fmt.Sprintf("soak-%03d", i), id: fmt.Sprintf("179%013d", i), key: fmt.Sprintf("soak-key-%03d-7e1f", i)}
		sim.AddApp(simulator.App{ID: a.id, Key: a.key, CorpID: "corp-soak", Allowance: 5 + i%20})
		for j := 1; j <= 2; j++ {
			if err := sim.AddConversation(a.id, simulator.NewConversation(fmt.Sprintf("%d%03d", j, i), "conversation", 2+j)); err != nil {
				return false, err
			}
		}
		switch k := o.apps - 1 - i; {
		case k < o.endless:
			a.faulty = true
			pf.SetFault(a.id, "", endless[k%len(endless)])
		case k < o.endless+o.faulty:
			a.faulty = true
			pf.SetFault(a.id, "", faults[(k-o.endless)%len(faults)])
		}
		apps[i] = a
	}
	base, closeSim, err := pf.Listen("127.0.0.1:0")
	if err != nil {
		return false, err
	}
	defer closeSim()
	churnCtx, stopChurn := context.WithCancel(ctx)
	defer stopChurn()
	go sim.Churn(churnCtx, 500*time.Millisecond, rand.New(rand.NewPCG(1, 2))) // #nosec G404 -- load pattern, not a secret

	// The exporter.
	binary := o.binary
	if binary == "" {
		binary = filepath.Join(dir, "duix_exporter")
		build := exec.CommandContext(ctx, "go", "build", "-o", binary, ".") // #nosec G204 -- a temporary path of our own
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return false, fmt.Errorf("building the exporter: %w", err)
		}
	}
	cfgPath := filepath.Join(dir, "duix.yml")
	if err := writeConfig(cfgPath, base, apps); err != nil {
		return false, err
	}
	exp, err := startExporter(ctx, binary, cfgPath, o)
	if err != nil {
		return false, err
	}
	defer exp.stop()

	s := &soak{o: o, apps: apps, url: exp.url, client: newClient(o)}
	// Warm up, not counted: every conversation's details are fetched, and
	// a short burst at full concurrency fills the exporter's pool of idle
	// connections to the platform (up to api.max_concurrency, kept for
	// 90 s; resets and oversized bodies close some).
	if r := s.scrape(ctx, "/metrics", nil); r.err != nil {
		return false, fmt.Errorf("warm-up scrape: %w (exporter log:\n%s)", r.err, exp.Out.String())
	}
	warmCtx, stopWarm := context.WithTimeout(ctx, min(2*time.Second, o.duration/5))
	var warm sync.WaitGroup
	for range o.scrapers {
		warm.Add(1)
		go func() {
			defer warm.Done()
			for warmCtx.Err() == nil {
				s.scrape(warmCtx, "/metrics", nil)
			}
		}()
	}
	warm.Wait()
	stopWarm()
	s.client.CloseIdleConnections()
	time.Sleep(2 * time.Second)
	start, err := s.sample(ctx, exp)
	if err != nil {
		return false, err
	}

	// The run lasts -duration, and until the samples under load are all
	// taken: on a busy machine a sample may take long, and delays the
	// next ones, never the other way round.
	runCtx, endRun := context.WithCancel(ctx)
	defer endRun()
	var (
		wg      sync.WaitGroup
		middle  sampleT
		midErr  error
		samples []sampleT // every tenth of the run, under load
		sampled = make(chan struct{})
	)
	began := time.Now()
	go func() {
		defer close(sampled)
		for i := 1; i < 10; i++ {
			if !sleepUntil(ctx, began.Add(time.Duration(i)*o.duration/10)) {
				midErr = ctx.Err()
				return
			}
			smp, err := s.sample(ctx, exp)
			if err != nil {
				midErr = err
				return
			}
			samples = append(samples, smp)
			if i == 5 {
				middle = smp
			}
		}
	}()
	go func() {
		sleepUntil(ctx, began.Add(o.duration))
		<-sampled
		endRun()
	}()
	for i := range uint64(o.scrapers) { // #nosec G115 -- checked positive above
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.scraper(runCtx, ctx, i)
		}()
	}
	wg.Wait()
	<-sampled
	elapsed := time.Since(began)
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if midErr != nil {
		return false, midErr
	}
	// At rest: the scrapers' connections are closed and the exporter's
	// handlers return. How long that takes depends on the machine's
	// speed: the goroutines are sampled until they are within the bar,
	// for up to atRest (then the last sample counts).
	s.client.CloseIdleConnections()
	var end sampleT
	for waited := time.Duration(0); ; waited += time.Second {
		if !sleepUntil(ctx, time.Now().Add(time.Second)) {
			return false, ctx.Err()
		}
		if end, err = s.sample(ctx, exp); err != nil {
			return false, err
		}
		if end.goroutines <= s.goroutineBar(start) || waited >= atRest {
			break
		}
	}
	peak, err := exp.status("VmHWM:")
	if err != nil {
		return false, err
	}
	return s.report(os.Stdout, elapsed, start, middle, end, samples, peak, sim), nil
}

// atRest bounds the wait for the exporter to come to rest after the run:
// far beyond what a busy machine needs.
const atRest = 30 * time.Second

// sleepUntil waits until t, or until ctx ends; it reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-time.After(time.Until(t)):
		return true
	case <-ctx.Done():
		return false
	}
}

// goroutineBar is the most goroutines the exporter may have at rest after
// the run, given those at rest before it. At rest, each idle connection to
// the platform holds 2 goroutines; their number moves between 0 and
// api.max_concurrency.
func (s *soak) goroutineBar(start sampleT) float64 {
	return start.goroutines + float64(s.o.maxGoroutineGrowth+2*config.DefaultMaxConcurrency)
}

// writeConfig writes a configuration with the default settings.
func writeConfig(path, base string, apps []app) error {
	var b strings.Builder
	fmt.Fprintf(&b, "api:\n  base_url: %q\napps:\n", base)
	for i, a := range apps {
		fmt.Fprintf(&b, "  - name: %q\n    app_id: %q\n    app_key: %q\n    conversations: [\"1%03d\", \"2%03d\"]\n", a.name, a.id, a.key, i, i)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// exporter is the exporter's process and its URL.
type exporter struct {
	*platformtest.Process
	url string
}

func startExporter(ctx context.Context, binary, cfgPath string, o options) (*exporter, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	// Every scraper must be served at once: the default limit (40) would
	// answer 503 to the others, as it should.
	cmd := exec.Command(binary, "--config.file="+cfgPath, "--web.listen-address="+addr, // #nosec G204 -- the binary under test, named on our command line
		"--web.max-requests="+strconv.Itoa(o.scrapers+10), "--log.level=warn")
	if o.goMemLimit != "" {
		cmd.Env = append(os.Environ(), "GOMEMLIMIT="+o.goMemLimit)
	}
	p, err := platformtest.StartProcess("the exporter", cmd)
	if err != nil {
		return nil, err
	}
	e := &exporter{p, "http://" + addr}
	if err := p.WaitReady(ctx, e.url+"/-/ready", time.Minute); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

func (e *exporter) stop() { _ = e.Stop(15 * time.Second) }

// status reads a size in bytes from /proc/PID/status of the exporter:
// "VmRSS:" its resident set size, "VmHWM:" the peak of it.
func (e *exporter) status(field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", e.Cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}

func newClient(o options) *http.Client {
	return &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: o.scrapers + 1, DisableCompression: true},
		Timeout:   o.scrapeTimeout,
	}
}

type soak struct {
	o      options
	apps   []app
	url    string
	client *http.Client

	metricsLat, probeLat latencies
	scrapes, failed      atomic.Int64
	faultyUp             atomic.Int64
	firstFailure         atomic.Pointer[string]
}

type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.d = append(l.d, d)
}

func (l *latencies) percentiles() (n int, p50, p90, p99, maxD time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0, 0, 0, 0, 0
	}
	d := slices.Clone(l.d)
	slices.Sort(d)
	at := func(q float64) time.Duration { return d[min(len(d)-1, int(q*float64(len(d))))] }
	return len(d), at(.50), at(.90), at(.99), d[len(d)-1]
}

type result struct {
	up  map[string]float64
	err error
}

// scrape GETs path and reads the duix_up samples of the answer.
func (s *soak) scrape(ctx context.Context, path string, lat *latencies) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(s.o.scrapeTimeout.Seconds(), 'f', -1, 64))
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	up := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, `duix_up{app="`)
		if !ok {
			continue
		}
		name, val, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return result{err: fmt.Errorf("bad sample %q", line)}
		}
		up[name] = v
	}
	if err := sc.Err(); err != nil {
		return result{err: err}
	}
	if lat != nil {
		lat.add(time.Since(start))
	}
	if resp.StatusCode != http.StatusOK {
		return result{err: fmt.Errorf("%s: HTTP %d", path, resp.StatusCode)}
	}
	return result{up: up}
}

func (s *soak) fail(msg string) {
	s.failed.Add(1)
	s.firstFailure.CompareAndSwap(nil, &msg)
}

// scraper scrapes until run ends; the scrape in flight then is finished
// and counted, so that every scraper makes at least one, however slow the
// machine. Only the end of ctx (a signal) cuts a scrape short.
func (s *soak) scraper(run, ctx context.Context, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7)) // #nosec G404 -- load pattern, not a secret
	for first := true; first || run.Err() == nil; first = false {
		var (
			path   = "/metrics"
			lat    = &s.metricsLat
			expect = s.apps
		)
		if rng.Float64() < s.o.probeShare {
			a := s.apps[rng.IntN(len(s.apps))]
			path, lat, expect = "/probe?app="+a.name, &s.probeLat, []app{a}
		}
		r := s.scrape(ctx, path, lat)
		if ctx.Err() != nil {
			return // cut short by a signal: not counted
		}
		s.scrapes.Add(1)
		if r.err != nil {
			s.fail(r.err.Error())
			continue
		}
		bad := 0
		var first string
		for _, a := range expect {
			v, ok := r.up[a.name]
			switch {
			case a.faulty && ok && v == 1:
				s.faultyUp.Add(1)
			case !a.faulty && (!ok || v != 1):
				if bad == 0 {
					first = fmt.Sprintf("%s: app %s has duix_up %v (present: %v)", path, a.name, v, ok)
				}
				bad++
			}
		}
		if bad > 0 {
			s.fail(first)
		}
	}
}

type sampleT struct {
	goroutines float64
	rss        int64
	heap       float64 // in use, garbage included
	goal       float64 // next GC's heap goal: twice the heap live after the last GC (GOGC=100)
}

// sample reads the exporter's goroutines and heap from its own metrics and
// its RSS from /proc.
func (s *soak) sample(ctx context.Context, e *exporter) (sampleT, error) {
	var out sampleT
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/metrics", nil)
	if err != nil {
		return out, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return out, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			out.goroutines, _ = strconv.ParseFloat(v, 64)
		}
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			out.heap, _ = strconv.ParseFloat(v, 64)
		}
		if v, ok := strings.CutPrefix(line, "go_memstats_next_gc_bytes "); ok {
			out.goal, _ = strconv.ParseFloat(v, 64)
		}
	}
	out.rss, err = e.status("VmRSS:")
	return out, err
}

func mib(b float64) string { return fmt.Sprintf("%.1f", b/(1<<20)) }

func (s *soak) report(w io.Writer, elapsed time.Duration, start, middle, end sampleT, samples []sampleT, peak int64, sim *simulator.Simulator) bool {
	o := s.o
	limit := o.goMemLimit
	if limit == "" {
		limit = "not set"
	}
	fmt.Fprintf(w, "soak: %d apps (%d failing on purpose, %d answering endless bodies), %d scrapers (%.0f%% /probe), %s, scrape timeout %s, GOMEMLIMIT %s\n\n",
		o.apps, o.faulty, o.endless, o.scrapers, 100*o.probeShare, elapsed.Round(100*time.Millisecond), o.scrapeTimeout, limit)
	n := s.scrapes.Load()
	fmt.Fprintf(w, "scrapes:                       %d (%.1f/s)\n", n, float64(n)/elapsed.Seconds())
	fmt.Fprintf(w, "failed scrapes of healthy apps: %d\n", s.failed.Load())
	if f := s.firstFailure.Load(); f != nil {
		fmt.Fprintf(w, "  first: %s\n", *f)
	}
	fmt.Fprintf(w, "failing apps reported up:       %d\n", s.faultyUp.Load())
	var calls int64
	for _, ep := range []string{simulator.EndpointConcurrency, simulator.EndpointSessions, simulator.EndpointConversation} {
		calls += sim.Requests(ep)
	}
	fmt.Fprintf(w, "calls to the platform:          %d (%.1f per scrape: concurrent scrapes share them)\n\n", calls, float64(calls)/float64(max(n, 1)))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency\tscrapes\tp50\tp90\tp99\tmax\t")
	for _, l := range []struct {
		name string
		l    *latencies
	}{{"/metrics", &s.metricsLat}, {"/probe", &s.probeLat}} {
		c, p50, p90, p99, mx := l.l.percentiles()
		r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", l.name, c, r(p50), r(p90), r(p99), r(mx))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "exporter\tstart (at rest)\tmiddle (under load)\tend (at rest)\t")
	fmt.Fprintf(tw, "goroutines\t%.0f\t%.0f\t%.0f\t\n", start.goroutines, middle.goroutines, end.goroutines)
	fmt.Fprintf(tw, "RSS (MiB)\t%s\t%s\t%s\t\n", mib(float64(start.rss)), mib(float64(middle.rss)), mib(float64(end.rss)))
	fmt.Fprintf(tw, "heap in use (MiB)\t%s\t%s\t%s\t\n", mib(start.heap), mib(middle.heap), mib(end.heap))
	fmt.Fprintf(tw, "live heap at last GC (MiB)\t%s\t%s\t%s\t\n", mib(start.goal/2), mib(middle.goal/2), mib(end.goal/2))
	fmt.Fprintf(tw, "peak RSS (VmHWM, MiB)\t\t\t%s\t\n", mib(float64(peak)))
	_ = tw.Flush()
	fmt.Fprintln(w)
	// Under load, every tenth of the run: a leak shows as a trend, the
	// garbage collector's rhythm as noise around a plateau.
	var rssLine, liveLine, grLine []string
	var firstRSS, secondRSS int64
	for i, smp := range samples {
		rssLine = append(rssLine, mib(float64(smp.rss)))
		liveLine = append(liveLine, mib(smp.goal/2))
		grLine = append(grLine, fmt.Sprintf("%.0f", smp.goroutines))
		if i < len(samples)/2 {
			firstRSS = max(firstRSS, smp.rss)
		} else {
			secondRSS = max(secondRSS, smp.rss)
		}
	}
	fmt.Fprintf(w, "under load, every %s:\n  RSS (MiB):       %s\n  live heap (MiB): %s\n  goroutines:      %s\n\n",
		o.duration/10, strings.Join(rssLine, " "), strings.Join(liveLine, " "), strings.Join(grLine, " "))

	ok := true
	bar := func(pass bool, format string, args ...any) {
		mark := "ok  "
		if !pass {
			mark, ok = "MISS", false
		}
		fmt.Fprintf(w, "%s %s\n", mark, fmt.Sprintf(format, args...))
	}
	bar(n >= int64(o.scrapers), "scrapes made: %d (at least one per scraper)", n)
	bar(s.failed.Load() == 0, "failed scrapes of healthy apps: %d (bar: 0)", s.failed.Load())
	bar(s.faultyUp.Load() == 0, "failing apps reported up: %d (bar: 0)", s.faultyUp.Load())
	grBar := s.goroutineBar(start)
	bar(end.goroutines <= grBar, "goroutines at rest: %.0f after, %.0f before (bar: at most %.0f: +%d, +2 per idle connection to the platform, at most %d of them)",
		end.goroutines, start.goroutines, grBar, o.maxGoroutineGrowth, config.DefaultMaxConcurrency)
	rssBar := int64(float64(firstRSS)*o.maxRSSGrowth) + 8<<20
	bar(len(samples) >= 2 && secondRSS <= rssBar, "RSS under load: at most %s MiB in the second half, %s MiB in the first (bar: at most %s MiB)",
		mib(float64(secondRSS)), mib(float64(firstRSS)), mib(float64(rssBar)))
	if o.maxPeakRSS > 0 {
		bar(peak <= o.maxPeakRSS<<20, "peak RSS (VmHWM): %s MiB, GOMEMLIMIT %s (bar: at most %d MiB)", mib(float64(peak)), limit, o.maxPeakRSS)
	}
	return ok
}
