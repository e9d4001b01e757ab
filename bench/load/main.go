//go:build linux

// Command load measures what a scrape of duix_exporter costs beyond the
// upstream calls it has to make. It runs the binary twice, on loopback:
// `duix_exporter simulator` with N generated apps and a latency per answer,
// and the exporter configured for them. In its own process it makes the 2N
// calls of a scrape (getconcurrentNumber and getconcurrentList of every app)
// with a plain, tuned http.Client at the exporter's concurrency, decoding
// the JSON, and measures their wall time and its own CPU time; then it
// scrapes the exporter and measures the wall time and the exporter's CPU
// time. The simulator runs in a process of its own, so both CPU figures are
// the cost of the calls alone. It reports their ratios, the series per app
// without conversations (from a short extra run of one app unless
// -conversations is 0), the exporter's peak RSS, the upstream calls caused
// by one scraper and by two simultaneous ones (the simulator counts them at
// its /metrics), and the live-heap growth of counting a 100 000-entry
// session list with the real client. The exporter runs as shipped: the
// harness sets no GOGC and no GOMEMLIMIT, and passes on none of its own.
// It prints the machine with the figures, and exits 1 when a target is
// missed (unless -no-fail) and 2 when it cannot run. Linux only: it reads
// /proc. It stops its child processes on any exit, and they die with it if
// it is killed.
//
//	go run ./bench/load -apps 1000 -latency 20ms -concurrency 64 -scrapes 20
//	go run ./bench/load -apps 5000 -scrapes 10
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/duix-exporter/duix_exporter/simulator"
)

// Targets. The wall and CPU ratios are set for the reference run (see
// reference); other runs report them. The RSS target holds for any number
// of apps up to 5000 (its reference); the others hold for every run.
const (
	targetWallRatio  = 1.05 // scrape wall / direct wall
	targetCPURatio   = 1.6  // exporter CPU per scrape / direct CPU per round
	targetSeries     = 8    // samples of one app without conversations, lifecycle off
	lifecycleSeries  = 16   // what the session lifecycle adds per app
	targetRSS        = 96 << 20
	targetTwoRatio   = 1.00 // calls of two simultaneous scrapes / one
	targetHeapGrowth = 1 << 20
)

// scrapeTimeout bounds every scrape; it is sent as Prometheus does.
const scrapeTimeout = 60 * time.Second

type options struct {
	apps, concurrency, scrapes int
	sessions, conversations    int
	latency, timeout           time.Duration
	binary, saveScrape         string
	heapEntries                int
	noFail                     bool
	lifecycle                  bool
}

func main() {
	var o options
	flag.IntVar(&o.apps, "apps", 1000, "Number of apps (N).")
	flag.DurationVar(&o.latency, "latency", 20*time.Millisecond, "Latency the simulator adds to every answer.")
	flag.IntVar(&o.concurrency, "concurrency", 64, "api.max_concurrency of the exporter, and the concurrency of the direct calls.")
	flag.IntVar(&o.scrapes, "scrapes", 20, "Measured scrapes (K, at most 100), after a warm-up scrape; each follows a round of direct calls.")
	flag.IntVar(&o.sessions, "sessions", 2, "Active sessions per app.")
	flag.IntVar(&o.conversations, "conversations", 1, "Configured conversations per app (their details are cached after the warm-up).")
	flag.StringVar(&o.binary, "binary", "", "duix_exporter binary (empty: build it from the module with go build).")
	flag.IntVar(&o.heapEntries, "heap-entries", 100000, "Length of the session list whose counting is measured for heap growth (0: skip).")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "Stop the whole run after this long.")
	flag.BoolVar(&o.noFail, "no-fail", false, "Exit 0 even when a target is missed.")
	flag.BoolVar(&o.lifecycle, "lifecycle", false, "Turn the session lifecycle metrics on (sessions.lifecycle; 16 more series per app).")
	flag.StringVar(&o.saveScrape, "save-scrape", "", "Write the body of the last scrape to this file.")
	flag.Parse()
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	missed, err := run(ctx, o, os.Stdout)
	cancel()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	}
	if missed > 0 && !o.noFail {
		os.Exit(1)
	}
}

func (o options) check() error {
	if o.apps < 1 || o.apps > simulator.MaxFleetApps || o.sessions < 0 || o.sessions > simulator.MaxFleetSessions ||
		o.conversations < 0 || o.conversations > simulator.MaxFleetConversations || o.concurrency < 1 || o.concurrency > 4096 ||
		o.scrapes < 1 || o.scrapes > 100 || o.latency < 0 || o.latency > 10*time.Second || o.timeout <= 0 || o.heapEntries < 0 {
		return fmt.Errorf("a flag is out of range: -apps 1..%d, -sessions 0..%d, -conversations 0..%d, -concurrency 1..4096, -scrapes 1..100, -latency 0..10s, -timeout > 0, -heap-entries >= 0",
			simulator.MaxFleetApps, simulator.MaxFleetSessions, simulator.MaxFleetConversations)
	}
	return nil
}

// reference tells whether o is the run the wall and CPU targets are set
// for: 1000 apps with 2 sessions and 1 conversation each, 20 ms latency,
// concurrency 64, the session lifecycle off (its 16 series per app are
// priced apart: docs/performance.md). -scrapes changes how it is measured,
// not what.
func (o options) reference() bool {
	return o.apps == 1000 && o.sessions == 2 && o.conversations == 1 && o.latency == 20*time.Millisecond &&
		o.concurrency == 64 && !o.lifecycle
}

func run(ctx context.Context, o options, out io.Writer) (missed int, err error) {
	r, err := measure(ctx, o)
	if err != nil {
		return 0, err
	}
	return report(out, o, r), nil
}

// result is what a run measured.
type result struct {
	walls, directWalls []float64 // per round: a scrape, the direct calls (s)
	directCPUs         []float64 // per round: this process's CPU time of the direct calls (s)
	exporterCPU        float64   // per scrape, mean (s)
	series             int       // samples of one app without conversations
	hwm                int64     // the exporter's peak RSS (bytes)
	hwmOne             int64     // the same before two scrapers gathered at once
	one, two           int64     // upstream calls of one scrape, of two simultaneous ones
	heapGrowth         uint64    // bytes
}

func measure(ctx context.Context, o options) (r result, err error) {
	dir, err := os.MkdirTemp("", "duix-load-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	bin := o.binary
	if bin == "" {
		if bin, err = buildBinary(ctx, dir); err != nil {
			return r, err
		}
	}
	p, err := startPlatform(ctx, bin, filepath.Join(dir, "main"), o, o.apps, o.conversations)
	if err != nil {
		return r, err
	}
	defer p.stop()
	d, err := newDirect(p.base, o)
	if err != nil {
		return r, err
	}

	// Warm up both: tokens, connections, conversation details.
	if _, err := p.scrapeUp(ctx, o.apps); err != nil {
		return r, fmt.Errorf("warm-up %w", err)
	}
	if _, _, err := d.round(ctx); err != nil {
		return r, err
	}

	// K rounds of the direct calls, each followed by a scrape. The
	// exporter is idle between scrapes, so its CPU time over the loop is
	// that of the K scrapes (read once: /proc counts in 10 ms ticks).
	pid := p.exp.Cmd.Process.Pid
	cpu0, err := cpuSeconds(pid)
	if err != nil {
		return r, err
	}
	var last []byte
	for range o.scrapes {
		wall, cpu, err := d.round(ctx)
		if err != nil {
			return r, err
		}
		r.directWalls, r.directCPUs = append(r.directWalls, wall.Seconds()), append(r.directCPUs, cpu)
		start := time.Now()
		if last, err = p.scrape(ctx); err != nil {
			return r, err
		}
		r.walls = append(r.walls, time.Since(start).Seconds())
		// Checked after the clock stops: the harness's own work.
		if err := checkUp(last, o.apps); err != nil {
			return r, fmt.Errorf("%w\n%s", err, p.exp.Out.String())
		}
	}
	cpu1, err := cpuSeconds(pid)
	if err != nil {
		return r, err
	}
	r.exporterCPU = (cpu1 - cpu0) / float64(o.scrapes)
	if o.saveScrape != "" {
		if err := os.WriteFile(o.saveScrape, last, 0o600); err != nil {
			return r, err
		}
	}
	if r.one, err = p.callsOf(ctx, 1, o.apps); err != nil {
		return r, err
	}
	if r.hwmOne, err = peakRSS(pid); err != nil {
		return r, err
	}
	if r.two, err = p.callsOf(ctx, 2, o.apps); err != nil {
		return r, err
	}
	if r.hwm, err = peakRSS(pid); err != nil {
		return r, err
	}
	p.stop()

	// The series of one app without conversations: from this run, or
	// from a run of one such app.
	r.series = seriesOf(last, simulator.FleetApp(0, 0).Name)
	if o.conversations > 0 {
		small, err := startPlatform(ctx, bin, filepath.Join(dir, "series"), o, 1, 0)
		if err != nil {
			return r, err
		}
		defer small.stop()
		if last, err = small.scrapeUp(ctx, 1); err != nil {
			return r, err
		}
		r.series = seriesOf(last, simulator.FleetApp(0, 0).Name)
		small.stop()
	}
	if o.heapEntries > 0 {
		r.heapGrowth, _, err = heapGrowth(o.heapEntries)
	}
	return r, err
}

// report prints the figures and whether each target is met; it returns
// the number of targets missed.
func report(out io.Writer, o options, r result) (missed int) {
	wall, direct := summarize(r.walls), summarize(r.directWalls)
	var directCPU float64
	for _, c := range r.directCPUs {
		directCPU += c / float64(len(r.directCPUs))
	}
	wallRatio, cpuRatio := wall.median/direct.median, r.exporterCPU/directCPU
	twoRatio := float64(r.two) / float64(r.one)

	fmt.Fprintf(out, "duix_exporter load test: %d apps (per app: sessions %d, conversations %d), %s upstream latency, max_concurrency %d, session lifecycle %s, %d scrapes after a warm-up\n",
		o.apps, o.sessions, o.conversations, o.latency, o.concurrency, onOff(o.lifecycle), o.scrapes)
	if !o.reference() {
		fmt.Fprintln(out, "not the reference run (1000 apps, sessions 2, conversations 1, 20ms, max_concurrency 64, lifecycle off): wall and CPU ratios are reported, not checked")
	}
	fmt.Fprintf(out, "machine: %s, nproc %d, %s %s/%s\n\n", cpuModel(), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tmeasured\ttarget\t")
	row := func(name, value string) { fmt.Fprintf(tw, "%s\t%s\t\t\n", name, value) }
	check := func(name, value, target string, ok bool) {
		verdict := "met"
		if !ok {
			verdict, missed = "MISSED", missed+1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t\n", name, value, target, verdict)
	}
	row(fmt.Sprintf("direct: the %d calls, wall median (min)", 2*o.apps), fmt.Sprintf("%.3f s (%.3f s)", direct.median, direct.min))
	row("direct: harness CPU per round (mean)", fmt.Sprintf("%.3f s", directCPU))
	row("scrape: wall median (min)", fmt.Sprintf("%.3f s (%.3f s)", wall.median, wall.min))
	row("scrape: exporter CPU per scrape (mean)", fmt.Sprintf("%.3f s", r.exporterCPU))
	ratio := func(name string, v, target float64) {
		if o.reference() {
			check(name, fmt.Sprintf("%.3f", v), fmt.Sprintf("<= %.2f", target), v <= target)
		} else {
			fmt.Fprintf(tw, "%s\t%.3f\t(<= %.2f in the reference run)\t\n", name, v, target)
		}
	}
	ratio("scrape wall / direct wall (medians)", wallRatio, targetWallRatio)
	ratio("exporter CPU per scrape / direct CPU per round", cpuRatio, targetCPURatio)
	maxSeries := targetSeries
	if o.lifecycle {
		maxSeries += lifecycleSeries
	}
	check("series per app (0 conversations)", strconv.Itoa(r.series), fmt.Sprintf("<= %d", maxSeries), r.series <= maxSeries)
	row("exporter peak RSS, one scraper at a time", fmt.Sprintf("%.1f MiB", mib(r.hwmOne)))
	check("exporter peak RSS (VmHWM)", fmt.Sprintf("%.1f MiB", mib(r.hwm)), fmt.Sprintf("<= %.0f MiB", mib(targetRSS)), r.hwm <= targetRSS)
	row("upstream calls, one scraper (/ 2N)", fmt.Sprintf("%d (%.3f)", r.one, float64(r.one)/float64(2*o.apps)))
	check("upstream calls, two simultaneous scrapers (/ one)", fmt.Sprintf("%d (%.3f)", r.two, twoRatio), fmt.Sprintf("<= %.2f", targetTwoRatio), twoRatio <= targetTwoRatio)
	if o.heapEntries > 0 {
		check(fmt.Sprintf("live heap growth counting %d sessions", o.heapEntries), fmt.Sprintf("%.1f KiB", float64(r.heapGrowth)/(1<<10)),
			fmt.Sprintf("< %.0f MiB", mib(targetHeapGrowth)), r.heapGrowth < targetHeapGrowth)
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "\nper round: direct wall %s s, direct CPU %s s; scrape wall %s s\n", join(r.directWalls), join(r.directCPUs), join(r.walls))
	if missed > 0 {
		fmt.Fprintf(out, "%d target(s) missed\n", missed)
	} else {
		fmt.Fprintln(out, "every target met")
	}
	return missed
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
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

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func join(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strings.Join(s, " ")
}
