// Package gcpace sets the garbage collector's GOGC after every collection
// from the heap it found live, so that a small heap may grow further
// before the next collection than a large one.
//
// A fixed GOGC trades the same way at every size: the heap grows to
// (1 + GOGC/100) times what is live, and the collector's CPU goes down as
// GOGC goes up. The exporter has a memory target at its largest fleets
// (peak RSS at 5000 apps, where the registry holding a scrape's samples
// is most of the heap) and a CPU target at the usual ones (1000 apps,
// whose heap is a few MiB). With a budget, the heap of a small fleet may
// grow to 2.5 times what is live, and that of a large one keeps to 1.8
// times, as with a fixed GOGC 80. In alternating runs of `make load`
// (docs/performance.md), the mean CPU ratio at 1000 apps was 1.207 at
// GOGC 80 and 1.136 at 150 or with the budget; at 5000 apps, 150 alone
// took peak RSS from 56.4 to 73.9 MiB.
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Percent is the GOGC that lets a heap of live bytes grow to budget bytes
// before the next collection, within [low, high].
func Percent(live, budget uint64, low, high int) int {
	if live == 0 {
		return high
	}
	p := float64(budget)/float64(live)*100 - 100
	return int(min(max(p, float64(low)), float64(high)))
}

// Start sets GOGC to high, then, after every collection, to Percent of the
// heap that collection found live. The returned function stops it and
// leaves GOGC as it then is.
func Start(budget uint64, low, high int) (stop func()) {
	p := &pacer{
		budget: budget, low: low, high: high,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}},
		last:   high,
	}
	debug.SetGCPercent(high)
	p.arm()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.stopped = true
	}
}

type pacer struct {
	budget    uint64
	low, high int

	mu      sync.Mutex
	stopped bool
	sample  []metrics.Sample
	last    int
}

// sentinel is an object that no one keeps: its cleanup runs after the
// first collection that finds it unreachable. The pointer keeps it out of
// the runtime's batches of tiny pointer-free objects, whose cleanups may
// never run.
type sentinel struct {
	_ *byte
	_ [8]byte
}

// arm has collected run after the next collection.
func (p *pacer) arm() {
	runtime.AddCleanup(new(sentinel), (*pacer).collected, p)
}

// collected sets GOGC from the heap the last collection found live, and
// arms again.
func (p *pacer) collected() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() == metrics.KindUint64 {
		if v := Percent(p.sample[0].Value.Uint64(), p.budget, p.low, p.high); v != p.last {
			debug.SetGCPercent(v)
			p.last = v
		}
	}
	p.arm()
}
