//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/config"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// cpuSeconds is utime+stime of a process, from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	fields := strings.Fields(string(b[i+1:]))
	// After the command: state is field 3, utime 14 and stime 15.
	if i < 0 || len(fields) < 13 {
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

// peakRSS reads VmHWM from /proc/<pid>/status, in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/<pid>/status")
}

// cpuModel is the model name of the first CPU in /proc/cpuinfo.
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU model"
}

// heapGrowth counts a session list of n entries through the real client
// against a simulator on loopback in this process, and returns the largest
// growth of the live heap (measured after a GC, every 10 000 entries and at
// the end) over the live heap before the call. The list, its response
// (about 180 bytes an entry) and the connection are made once before
// measuring.
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
	// The exporter's client as the exporter builds it, with a response
	// bound that lets the whole list through.
	cfg, err := config.Parse(fmt.Appendf(nil, "api:\n  base_url: %q\n  timeout: 1m\n  max_concurrency: 1\n  max_response_bytes: %d\n"+
		"apps:\n  - name: heap\n    app_id: %q\n    app_key: %q\n", base, 64<<20, id, key), "")
	if err != nil {
		return 0, 0, err
	}
	pool, err := client.NewPool(cfg, client.PoolOptions{Metrics: client.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		return 0, 0, err
	}
	defer pool.Close()
	c := pool.Client("heap")
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

// checkUp verifies that a scrape reported every app up.
func checkUp(body []byte, apps int) error {
	up, ok := 0, 0
	for line := range bytes.SplitSeq(body, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("duix_up{")) {
			up++
			if bytes.HasSuffix(line, []byte(" 1")) {
				ok++
			}
		}
	}
	if up != apps || ok != apps {
		return fmt.Errorf("scrape reported %d apps, %d up; want %d up", up, ok, apps)
	}
	return nil
}

// seriesOf counts the samples of an exposition labelled app="name".
func seriesOf(body []byte, name string) int {
	label := []byte(`app="` + name + `"`)
	n := 0
	for line := range bytes.SplitSeq(body, []byte("\n")) {
		if i := bytes.Index(line, label); i > 0 && line[0] != '#' && (line[i-1] == '{' || line[i-1] == ',') {
			n++
		}
	}
	return n
}
