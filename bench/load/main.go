// Command load measures duix_exporter against the physical limit of its
// job. It starts the simulator of the platform in this process on loopback,
// with a chosen latency per request and N apps, runs the real exporter
// binary as a separate process against it, and compares a scrape of every
// app with the same 2N upstream calls made directly by a plain, tuned HTTP
// client at the same concurrency. It prints the scrape wall time, the
// ideal, their ratio, the exporter's CPU seconds per scrape and peak RSS
// (read from /proc), the upstream calls caused by one scraper and by two
// simultaneous ones, and the heap growth of counting a 100 000-entry
// session list; then whether each target is met. It exits 1 when a target
// is missed (unless -no-fail) and 2 when it cannot run.
//
//	go run ./bench/load -apps 1000 -latency 20ms -concurrency 64 -scrapes 5
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// Targets of the reference run: 1000 apps, 20 ms latency, concurrency 64.
const (
	targetWallRatio  = 1.10
	targetCPU        = 0.30 // seconds per scrape
	targetRSS        = 64 << 20
	targetTwoRatio   = 1.05
	targetHeapGrowth = 1 << 20
)

type options struct {
	apps, concurrency, scrapes int
	sessions, conversations    int
	latency                    time.Duration
	binary                     string
	heapEntries                int
	noFail                     bool
	saveScrape                 string
}

func main() {
	var o options
	flag.IntVar(&o.apps, "apps", 1000, "Number of apps (N).")
	flag.DurationVar(&o.latency, "latency", 20*time.Millisecond, "Latency the simulator adds to every answer.")
	flag.IntVar(&o.concurrency, "concurrency", 64, "api.max_concurrency of the exporter, and the concurrency of the ideal client (C).")
	flag.IntVar(&o.scrapes, "scrapes", 5, "Measured scrapes (K), after a warm-up scrape.")
	flag.IntVar(&o.sessions, "sessions", 2, "Active sessions per app.")
	flag.IntVar(&o.conversations, "conversations", 1, "Configured conversations per app (their details are cached after the warm-up).")
	flag.StringVar(&o.binary, "binary", "", "Exporter binary (empty: build it from the module with go build).")
	flag.IntVar(&o.heapEntries, "heap-entries", 100000, "Length of the session list whose counting is measured for heap growth (0: skip).")
	flag.BoolVar(&o.noFail, "no-fail", false, "Exit 0 even when a target is missed.")
	flag.StringVar(&o.saveScrape, "save-scrape", "", "Write the body of the last scrape to this file.")
	flag.Parse()
	if o.apps < 1 || o.concurrency < 1 || o.concurrency > 4096 || o.scrapes < 1 || o.sessions < 0 || o.conversations < 0 {
		fmt.Fprintln(os.Stderr, "load: -apps, -concurrency (at most 4096) and -scrapes must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	missed, err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	}
	if missed > 0 && !o.noFail {
		os.Exit(1)
	}
}

// fleet is the simulated platform and what the clients need to call it.
type fleet struct {
	sim   *simulator.Simulator
	base  string
	ids   []string
	keys  []string
	conns atomic.Int64 // connections accepted
}

func startFleet(o options) (*fleet, func(), error) {
	sim := simulator.New()
	f := &fleet{sim: sim}
	for i := range o.apps {
		id, key := fmt.Sprintf("17900000%011d", i), fmt.Sprintf("load-key-%06d-0f3c9b2e7a51d8", i)
		sim.AddApp(simulator.App{ID: id, Key: key, CorpID: fmt.Sprintf("corp-%d", i%50), Allowance: o.sessions + 8})
		for c := range o.conversations {
			if err := sim.AddConversation(id, simulator.NewConversation(convID(i, c), fmt.Sprintf("desk %d", c), 5)); err != nil {
				return nil, nil, err
			}
		}
		for s := range o.sessions {
			conv := ""
			if o.conversations > 0 {
				conv = convID(i, s%o.conversations)
			}
			if _, err := sim.StartSession(id, conv); err != nil {
				return nil, nil, err
			}
		}
		f.ids, f.keys = append(f.ids, id), append(f.keys, key)
	}
	sim.SetLatency("", "", o.latency)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{
		Handler:           sim,
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				f.conns.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(l) }()
	f.base = "http://" + l.Addr().String() + simulator.BasePath
	return f, func() { _ = srv.Close() }, nil
}

func convID(app, c int) string { return fmt.Sprintf("%d%02d", 1000+app, c) }

func appName(i int) string { return fmt.Sprintf("app-%05d", i) }

// calls is the number of requests that reached the simulator.
func (f *fleet) calls() int64 {
	var n int64
	for _, ep := range []string{simulator.EndpointConcurrency, simulator.EndpointSessions, simulator.EndpointConversation, simulator.EndpointStop} {
		n += f.sim.Requests(ep)
	}
	return n
}

// writeConfig writes the exporter's configuration, each app's key in a
// file of its own as recommended.
func writeConfig(path string, o options, f *fleet) error {
	keys := filepath.Join(filepath.Dir(path), "keys")
	if err := os.Mkdir(keys, 0o700); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "api:\n  base_url: %q\n  timeout: 10s\n  max_concurrency: %d\napps:\n", f.base, o.concurrency)
	for i, id := range f.ids {
		keyFile := filepath.Join(keys, appName(i)+".key")
		if err := os.WriteFile(keyFile, []byte(f.keys[i]+"\n"), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(&b, "  - name: %s\n    app_id: %q\n    app_key_file: %q\n", appName(i), id, keyFile)
		if o.conversations > 0 {
			b.WriteString("    conversations: [")
			for c := range o.conversations {
				if c > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%q", convID(i, c))
			}
			b.WriteString("]\n")
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// exporter is the exporter process.
type exporter struct {
	cmd  *exec.Cmd
	url  string
	logs *bytes.Buffer
	http *http.Client
}

func buildBinary(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		return "", fmt.Errorf("run from the module (go env GOMOD: %v), or give -binary", err)
	}
	bin := filepath.Join(dir, "duix_exporter")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, ".") // #nosec G204 -- a path in our own temporary directory
	build.Dir = filepath.Dir(strings.TrimSpace(string(out)))
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building the exporter: %w", err)
	}
	return bin, nil
}

func startExporter(ctx context.Context, bin, cfgPath string) (*exporter, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	e := &exporter{url: "http://" + addr, logs: &bytes.Buffer{}}
	// #nosec G204 -- the exporter binary is the harness's own input, by design
	e.cmd = exec.Command(bin, "--config.file="+cfgPath, "--web.listen-address="+addr, "--log.level=warn", "--web.max-requests=0")
	e.cmd.Stdout, e.cmd.Stderr = e.logs, e.logs
	if err := e.cmd.Start(); err != nil {
		return nil, err
	}
	e.http = &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := e.http.Get(e.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return e, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			e.stop()
			return nil, fmt.Errorf("the exporter did not become ready: %v\n%s", err, e.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *exporter) stop() {
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = e.cmd.Process.Kill()
		<-done
	}
}

// prometheusAccept is what Prometheus 3 sends when scraping.
const prometheusAccept = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"

// scrape fetches /metrics as Prometheus does (gzip, its Accept header and
// scrape timeout) and returns the wall time and the body as sent.
func (e *exporter) scrape(ctx context.Context) (time.Duration, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/metrics", nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", prometheusAccept)
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "30")
	start := time.Now()
	resp, err := e.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	wall := time.Since(start)
	if err != nil {
		return 0, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("scrape: HTTP %d: %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		if body, err = io.ReadAll(zr); err != nil {
			return 0, nil, err
		}
	}
	return wall, body, nil
}

// checkUp verifies that a scrape reported every app up.
func checkUp(body []byte, apps int) error {
	up := bytes.Count(body, []byte("\nduix_up{")) // every series line starts a line
	ok := 0
	for line := range bytes.SplitSeq(body, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("duix_up{")) && bytes.HasSuffix(line, []byte(" 1")) {
			ok++
		}
	}
	if up != apps || ok != apps {
		return fmt.Errorf("scrape reported %d apps, %d up; want %d up", up, ok, apps)
	}
	return nil
}

// cpuSeconds is utime+stime of a process, from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("cannot parse /proc/<pid>/stat")
	}
	fields := strings.Fields(string(b[i+1:]))
	// After the command: state is field 3, utime 14 and stime 15.
	if len(fields) < 13 {
		return 0, errors.New("cannot parse /proc/<pid>/stat")
	}
	ut, err1 := strconv.ParseUint(fields[11], 10, 64)
	st, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const clockTicks = 100 // USER_HZ on Linux
	return float64(ut+st) / clockTicks, nil
}

// memory reads VmHWM (peak RSS) and VmRSS from /proc/<pid>/status, in bytes.
func memory(pid int) (hwm, rss int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmHWM" && k != "VmRSS") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("cannot parse %s", line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, err
		}
		if k == "VmHWM" {
			hwm = n << 10
		} else {
			rss = n << 10
		}
	}
	if hwm == 0 {
		return 0, 0, errors.New("no VmHWM in /proc/<pid>/status")
	}
	return hwm, rss, nil
}

// ideal makes the upstream calls of one scrape directly: getconcurrentNumber
// and getconcurrentList for every app, c at a time, with ready tokens, a
// plain http.Client and nothing else.
type ideal struct {
	http *http.Client
	reqs []idealRequest
	c    int
}

type idealRequest struct {
	url, auth string
}

func newIdeal(f *fleet, c int) (*ideal, error) {
	tr := &http.Transport{
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: c,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	id := &ideal{http: &http.Client{Transport: tr}, c: c}
	now := time.Now()
	for i, app := range f.ids {
		tok, err := simulator.MintToken(app, f.keys[i], now, now.Add(2*time.Hour))
		if err != nil {
			return nil, err
		}
		q := "?appId=" + url.QueryEscape(app)
		for _, ep := range []string{simulator.EndpointConcurrency, simulator.EndpointSessions} {
			id.reqs = append(id.reqs, idealRequest{url: f.base + "/" + ep + q, auth: "Bearer " + tok})
		}
	}
	return id, nil
}

func (id *ideal) run(ctx context.Context) (time.Duration, error) {
	var (
		next   atomic.Int64
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed error
	)
	start := time.Now()
	for range min(id.c, len(id.reqs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(id.reqs) {
					return
				}
				if err := id.call(ctx, id.reqs[i]); err != nil {
					mu.Lock()
					failed = errors.Join(failed, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), failed
}

func (id *ideal) call(ctx context.Context, r idealRequest) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", r.auth)
	resp, err := id.http.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ideal client: HTTP %d", resp.StatusCode)
	}
	return err
}

// heapGrowth counts a session list of n entries through the real client
// against a simulator on loopback, and returns the largest growth of the
// live heap (measured after a GC, every 10 000 entries and at the end)
// over the live heap before the call. The list, its response (about 180
// bytes an entry) and the connection are made once before measuring.
func heapGrowth(n int) (uint64, int, error) {
	sim := simulator.New()
	const id, key = "1790000000000999999", "heap-check-key-61c0d2"
	sim.AddApp(simulator.App{ID: id, Key: key, CorpID: "corp", Allowance: n})
	for i := range n {
		if _, err := sim.StartSession(id, fmt.Sprintf("conv-%d", i%7)); err != nil {
			return 0, 0, err
		}
	}
	base, closeFn, err := sim.Listen("127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer closeFn()
	u, err := url.Parse(base)
	if err != nil {
		return 0, 0, err
	}
	t := &client.Transport{
		HTTP:             &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}},
		BaseURL:          u,
		Timeout:          time.Minute,
		MaxResponseBytes: 1 << 30,
	}
	c := client.New(t, id, client.NewJWTSource(id, client.StaticKey(key), 0, nil))
	count := func(fn func(int)) (int, error) {
		seen := 0
		err := c.EachSession(context.Background(), client.SessionOptions{}, func(client.Session) error {
			seen++
			fn(seen)
			return nil
		})
		return seen, err
	}
	if got, err := count(func(int) {}); err != nil || got != n {
		return 0, got, fmt.Errorf("warm-up count: %d of %d sessions: %v", got, n, err)
	}

	var ms runtime.MemStats
	live := func() uint64 {
		runtime.GC()
		runtime.GC() // a second time, to free what sync.Pools held too
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := live()
	var peak uint64
	grew := func() {
		if now := live(); now > before {
			peak = max(peak, now-before)
		}
	}
	got, err := count(func(seen int) {
		if seen%10000 == 0 {
			grew()
		}
	})
	if err != nil || got != n {
		return 0, got, fmt.Errorf("count: %d of %d sessions: %v", got, n, err)
	}
	grew()
	return peak, got, nil
}

type stats struct{ median, min float64 }

func summarize(v []float64) stats {
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stats{median: m, min: s[0]}
}

func run(ctx context.Context, o options) (missed int, err error) {
	dir, err := os.MkdirTemp("", "duix-load-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)

	bin := o.binary
	if bin == "" {
		if bin, err = buildBinary(ctx, dir); err != nil {
			return 0, err
		}
	}
	f, closeFleet, err := startFleet(o)
	if err != nil {
		return 0, err
	}
	defer closeFleet()
	cfgPath := filepath.Join(dir, "duix.yml")
	if err := writeConfig(cfgPath, o, f); err != nil {
		return 0, err
	}
	exp, err := startExporter(ctx, bin, cfgPath)
	if err != nil {
		return 0, err
	}
	defer exp.stop()
	pid := exp.cmd.Process.Pid
	id, err := newIdeal(f, o.concurrency)
	if err != nil {
		return 0, err
	}

	// Warm up both: tokens, connections, conversation details.
	if _, body, err := exp.scrape(ctx); err != nil {
		return 0, err
	} else if err := checkUp(body, o.apps); err != nil {
		return 0, fmt.Errorf("warm-up %w\n%s", err, exp.logs.String())
	}
	if _, err := id.run(ctx); err != nil {
		return 0, err
	}

	var walls, ideals, cpus []float64
	conns0 := f.conns.Load()
	for range o.scrapes {
		d, err := id.run(ctx)
		if err != nil {
			return 0, err
		}
		ideals = append(ideals, d.Seconds())
		cpu0, err := cpuSeconds(pid)
		if err != nil {
			return 0, err
		}
		wall, body, err := exp.scrape(ctx)
		if err != nil {
			return 0, err
		}
		cpu1, err := cpuSeconds(pid)
		if err != nil {
			return 0, err
		}
		if err := checkUp(body, o.apps); err != nil {
			return 0, err
		}
		walls, cpus = append(walls, wall.Seconds()), append(cpus, cpu1-cpu0)
	}

	newConns := f.conns.Load() - conns0
	f.sim.ResetCounts()
	_, last, err := exp.scrape(ctx)
	if err != nil {
		return 0, err
	}
	one := f.calls()
	if o.saveScrape != "" {
		if err := os.WriteFile(o.saveScrape, last, 0o600); err != nil {
			return 0, err
		}
	}
	f.sim.ResetCounts()
	var (
		wg    sync.WaitGroup
		errs  [2]error
		start = make(chan struct{})
	)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, _, errs[i] = exp.scrape(ctx)
		}()
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return 0, err
	}
	two := f.calls()

	hwm, rss, err := memory(pid)
	if err != nil {
		return 0, err
	}

	var growth uint64
	var entries int
	if o.heapEntries > 0 {
		if growth, entries, err = heapGrowth(o.heapEntries); err != nil {
			return 0, err
		}
	}

	wall, ideal := summarize(walls), summarize(ideals)
	var cpuTotal float64
	for _, c := range cpus {
		cpuTotal += c
	}
	cpuPer := cpuTotal / float64(len(cpus))
	wallRatio := wall.median / ideal.median
	twoRatio := float64(two) / float64(one)

	fmt.Printf("duix_exporter load test: %d apps (%d sessions, %d conversations each), %s upstream latency, max_concurrency %d, %d scrapes after a warm-up, GOMAXPROCS %d of %d CPUs\n\n",
		o.apps, o.sessions, o.conversations, o.latency, o.concurrency, o.scrapes, runtime.GOMAXPROCS(0), runtime.NumCPU())
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tmeasured\ttarget\t")
	fmt.Fprintf(tw, "scrape wall time, median (min)\t%.3f s (%.3f s)\t\t\n", wall.median, wall.min)
	fmt.Fprintf(tw, "ideal: the %d calls made directly, median (min)\t%.3f s (%.3f s)\t\t\n", 2*o.apps, ideal.median, ideal.min)
	check := func(name, value, target string, ok bool) {
		verdict := "met"
		if !ok {
			verdict = "MISSED"
			missed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t\n", name, value, target, verdict)
	}
	check("scrape wall / ideal (medians)", fmt.Sprintf("%.3f", wallRatio), fmt.Sprintf("<= %.2f", targetWallRatio), wallRatio <= targetWallRatio)
	check("exporter CPU per scrape (mean)", fmt.Sprintf("%.3f s", cpuPer), fmt.Sprintf("<= %.2f s", targetCPU), cpuPer <= targetCPU)
	check("exporter peak RSS (VmHWM)", fmt.Sprintf("%.1f MiB (VmRSS now %.1f MiB)", mib(hwm), mib(rss)), fmt.Sprintf("<= %.0f MiB", mib(targetRSS)), hwm <= targetRSS)
	fmt.Fprintf(tw, "upstream connections opened while measuring\t%d\t\t\n", newConns)
	fmt.Fprintf(tw, "upstream calls, one scraper\t%d\t\t\n", one)
	fmt.Fprintf(tw, "upstream calls, two simultaneous scrapers\t%d\t\t\n", two)
	check("two scrapers / one", fmt.Sprintf("%.3f", twoRatio), fmt.Sprintf("<= %.2f", targetTwoRatio), twoRatio <= targetTwoRatio)
	if o.heapEntries > 0 {
		check(fmt.Sprintf("heap growth counting %d sessions", entries), fmt.Sprintf("%.1f KiB", float64(growth)/(1<<10)), fmt.Sprintf("< %.0f MiB", mib(targetHeapGrowth)), growth < targetHeapGrowth)
	}
	tw.Flush()
	fmt.Printf("\nexporter Go memory after a scrape: %s\n", goMemory(last))
	fmt.Printf("per scrape: wall %s s; ideal %s s; exporter CPU %s s\n", join(walls), join(ideals), join(cpus))
	if missed > 0 {
		fmt.Printf("%d target(s) missed\n", missed)
	} else {
		fmt.Println("every target met")
	}
	return missed, nil
}

// goMemory picks the Go runtime's memory figures out of a scrape.
func goMemory(body []byte) string {
	var out []string
	for _, m := range []struct{ name, label string }{
		{"go_memstats_heap_inuse_bytes", "heap in use"},
		{"go_memstats_stack_inuse_bytes", "stacks"},
		{"go_memstats_sys_bytes", "from the OS"},
		{"go_goroutines", "goroutines"},
	} {
		for line := range bytes.SplitSeq(body, []byte("\n")) {
			v, ok := bytes.CutPrefix(line, []byte(m.name+" "))
			if !ok {
				continue
			}
			x, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				continue
			}
			if strings.HasSuffix(m.name, "_bytes") {
				out = append(out, fmt.Sprintf("%s %.1f MiB", m.label, x/(1<<20)))
			} else {
				out = append(out, fmt.Sprintf("%s %.0f", m.label, x))
			}
		}
	}
	return strings.Join(out, ", ")
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func join(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strings.Join(s, " ")
}
