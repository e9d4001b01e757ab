//go:build linux

package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/simulator"
)

func TestProcFigures(t *testing.T) {
	pid := os.Getpid()
	before, err := cpuSeconds(pid)
	require.NoError(t, err)
	own0 := ownCPU()
	for start := time.Now(); time.Since(start) < 150*time.Millisecond; {
		runtime.Gosched() // burn CPU time of our own
	}
	after, err := cpuSeconds(pid)
	require.NoError(t, err)
	assert.Greater(t, after, before)
	assert.Greater(t, ownCPU(), own0)

	hwm, err := peakRSS(pid)
	require.NoError(t, err)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	assert.Greater(t, hwm, int64(1<<20), "VmHWM is in bytes")
	assert.Less(t, uint64(hwm), ms.Sys+(512<<20), "VmHWM is in bytes")
}

func TestCheckUp(t *testing.T) {
	body := []byte("# HELP duix_up x\n# TYPE duix_up gauge\nduix_up{app=\"a\"} 1\nduix_up{app=\"b\"} 1\nduix_upx 1\n")
	assert.NoError(t, checkUp(body, 2))
	assert.Error(t, checkUp(body, 3))
	assert.Error(t, checkUp([]byte("# x\nduix_up{app=\"a\"} 1\nduix_up{app=\"b\"} 0\n"), 2))
}

func TestSeriesOf(t *testing.T) {
	body := []byte(`# HELP duix_up x app="app-00000"
duix_up{app="app-00000"} 1
duix_up{app="app-000001"} 1
duix_sessions{app="app-00000",conversation="1"} 2
duix_info{other_app="app-00000"} 1
duix_info{x="y",app="app-00000"} 1
`)
	assert.Equal(t, 3, seriesOf(body, "app-00000"))
	assert.Equal(t, 0, seriesOf(body, "app-1"))
}

func TestLogValue(t *testing.T) {
	line := []byte(`{"level":"info","msg":"Simulator serving","base_url":"http://127.0.0.1:1/x","app_count":3}`)
	v, ok := logValue(line, "Simulator serving", "base_url")
	assert.True(t, ok)
	assert.Equal(t, "http://127.0.0.1:1/x", v)
	for _, bad := range []struct{ line, msg, key string }{
		{string(line), "Listening on", "base_url"},
		{string(line), "Simulator serving", "app_count"},
		{string(line), "Simulator serving", "address"},
		{`msg="Simulator serving" base_url=x`, "Simulator serving", "base_url"},
	} {
		_, ok := logValue([]byte(bad.line), bad.msg, bad.key)
		assert.False(t, ok, bad)
	}
}

func TestSummarize(t *testing.T) {
	assert.Equal(t, stats{median: 2, min: 1}, summarize([]float64{3, 1, 2}))
	assert.Equal(t, stats{median: 2.5, min: 1}, summarize([]float64{4, 1, 3, 2}))
}

func TestHeapGrowthOfASmallList(t *testing.T) {
	growth, n, err := heapGrowth(20000)
	require.NoError(t, err)
	assert.Equal(t, 20000, n)
	assert.Less(t, growth, uint64(1<<20))
}

// The direct calls decode the simulator's answers, and the simulator
// counts them: a round is exactly the 2N calls of a scrape.
func TestDirectRoundAgainstTheSimulator(t *testing.T) {
	o := options{apps: 5, sessions: 3, concurrency: 4}
	sim, _, err := simulator.NewFleet(simulator.Fleet{Apps: o.apps, Sessions: o.sessions})
	require.NoError(t, err)
	base, closeFn, err := sim.ListenWithMetrics("127.0.0.1:0")
	require.NoError(t, err)
	defer closeFn()
	p := &platform{metrics: strings.TrimSuffix(base, simulator.BasePath) + "/metrics", http: &http.Client{}}

	d, err := newDirect(base, o)
	require.NoError(t, err)
	before, err := p.calls(t.Context())
	require.NoError(t, err)
	wall, cpu, err := d.round(t.Context())
	require.NoError(t, err)
	assert.Positive(t, wall)
	assert.GreaterOrEqual(t, cpu, 0.0)
	after, err := p.calls(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(2*o.apps), after-before)

	d.sessions = 4 // the answers no longer match
	_, _, err = d.round(t.Context())
	assert.ErrorContains(t, err, "3 sessions, want 4")
}

// binDir holds the binary that binary builds, removed by TestMain.
var binDir string

// binary builds the binary once for the tests that run it.
var binary = sync.OnceValues(func() (string, error) {
	return buildBinary(context.Background(), binDir)
})

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "duix-load-test-"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

func TestRunReportsEveryFigure(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := binary()
	require.NoError(t, err)
	save := filepath.Join(t.TempDir(), "scrape.txt")
	o := options{apps: 3, sessions: 2, conversations: 1, concurrency: 4, scrapes: 2, binary: bin, saveScrape: save}
	var out bytes.Buffer
	start := time.Now()
	_, err = run(t.Context(), o, &out)
	require.NoError(t, err, out.String())
	t.Logf("run in %s:\n%s", time.Since(start), out.String())
	for _, row := range []string{
		"machine: ", "direct: the 6 calls", "scrape wall / direct wall", "exporter CPU per scrape / direct CPU per round",
		"series per app (0 conversations)", "exporter peak RSS", "upstream calls, one scraper", "two simultaneous scrapers",
	} {
		assert.Contains(t, out.String(), row)
	}
	assert.Regexp(t, `machine: .+, nproc \d+, go1\.\d+`, out.String(), "the machine is named")
	body, err := os.ReadFile(save)
	require.NoError(t, err)
	assert.NoError(t, checkUp(body, 3))
	assert.Empty(t, children(t), "every child process is gone")
}

func TestRunStopsItsChildrenWhenInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := binary()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		o := options{apps: 3, sessions: 1, concurrency: 2, scrapes: 100, latency: 20 * time.Millisecond, binary: bin}
		_, err := run(ctx, o, &bytes.Buffer{})
		done <- err
	}()
	// Interrupt once a child runs (at most 100 scrapes take ~12 s).
	for len(children(t)) == 0 {
		select {
		case err := <-done:
			t.Fatalf("the run ended before a child was seen: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Empty(t, children(t), "every child process is gone")
}

// children lists the processes whose parent is this process.
func children(t *testing.T) []int {
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestReportChecksEveryTarget(t *testing.T) {
	o := options{apps: 1000, sessions: 2, conversations: 1, latency: 20 * time.Millisecond, concurrency: 64, scrapes: 3, heapEntries: 1000}
	require.True(t, o.reference())
	good := result{
		walls: []float64{1.0, 1.02, 1.04}, directWalls: []float64{1, 1, 1}, directCPUs: []float64{0.2, 0.2, 0.2},
		exporterCPU: 0.32, series: 8, hwm: 96 << 20, one: 20, two: 20, heapGrowth: 1<<20 - 1,
	}
	var out bytes.Buffer
	assert.Zero(t, report(&out, o, good), out.String())
	assert.Contains(t, out.String(), "every target met")
	assert.NotContains(t, out.String(), "MISSED")

	bad := good
	bad.walls = []float64{1.06, 1.06, 1.06}
	bad.exporterCPU = 0.33
	bad.series, bad.hwm, bad.two, bad.heapGrowth = 9, 96<<20+1, 21, 1<<20
	out.Reset()
	assert.Equal(t, 6, report(&out, o, bad), out.String())
	assert.Equal(t, 6, strings.Count(out.String(), "MISSED"))
	assert.Contains(t, out.String(), "6 target(s) missed")

	// Any other run reports the wall and CPU ratios and checks the rest.
	for name, change := range map[string]func(*options){
		"lifecycle":     func(o *options) { o.lifecycle = true },
		"5000 apps":     func(o *options) { o.apps = 5000 },
		"no latency":    func(o *options) { o.latency = 0 },
		"concurrency":   func(o *options) { o.concurrency = 16 },
		"sessions":      func(o *options) { o.sessions = 0 },
		"conversations": func(o *options) { o.conversations = 0 },
	} {
		other := o
		change(&other)
		require.False(t, other.reference(), name)
		want := 4 // RSS, two scrapers, heap growth, series
		if other.lifecycle {
			want = 3 // 9 series are within the lifecycle's 24
		}
		out.Reset()
		assert.Equal(t, want, report(&out, other, bad), "%s: %s", name, out.String())
		assert.Contains(t, out.String(), "not the reference run", name)
		assert.Contains(t, out.String(), "1.060              (<= 1.05 in the reference run)", name)
		assert.Contains(t, out.String(), "1.650              (<= 1.60 in the reference run)", name)
	}
	lifecycle := o
	lifecycle.lifecycle = true
	bad.series = 25
	out.Reset()
	assert.Equal(t, 4, report(&out, lifecycle, bad), "25 series are more than the lifecycle's 24: %s", out.String())

	// How it is measured does not make it another run.
	same := o
	same.scrapes = 30
	assert.True(t, same.reference())
}

func TestCheckRefusesFlagsOutOfRange(t *testing.T) {
	good := options{apps: 10, sessions: 2, concurrency: 4, scrapes: 3, timeout: time.Minute}
	require.NoError(t, good.check())
	for name, change := range map[string]func(*options){
		"no app":           func(o *options) { o.apps = 0 },
		"no scrape":        func(o *options) { o.scrapes = 0 },
		"negative latency": func(o *options) { o.latency = -time.Millisecond },
		"no timeout":       func(o *options) { o.timeout = 0 },
		"negative heap":    func(o *options) { o.heapEntries = -1 },
	} {
		o := good
		change(&o)
		assert.ErrorContains(t, o.check(), "out of range", name)
	}
}
