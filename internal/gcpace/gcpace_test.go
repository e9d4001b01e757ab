package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentLetsTheHeapGrowToTheBudget(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 150},           // nothing live yet
		{1, 150},           // one byte
		{3 * mib / 2, 150}, // 1.5 MiB
		{10 * mib, 150},    // 4 times would be the budget: at most 2.5
		{16 * mib, 150},    // 2.5 times is the budget
		{17 * mib, 135},    // 2.35 times
		{20 * mib, 100},    // twice
		{21 * mib, 90},     // 1.90 times
		{22 * mib, 81},     // 1.81 times
		{23 * mib, 80},     // 1.74 times would be the budget: at least 1.8
		{25 * mib, 80},     // 1.6 times
		{40*mib - 1, 80},   // just under the budget live
		{40 * mib, 80},     // all of it live
		{100 * mib, 80},    // far over it
		{40 << 30, 80},     // 40 GiB
		{1 << 62, 80},      // no overflow
	} {
		assert.Equal(t, c.want, Percent(c.live, 40*mib, 80, 150), "live %d bytes", c.live)
	}
}

// gogc is the GOGC in force, as the runtime reports it.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// collectUntil runs collections until cond holds; a collection's cleanups
// run after it, on another goroutine, so it may take more than one. It
// fails only if cond never holds, however slow the machine.
func collectUntil(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	require.FailNow(t, msg, "GOGC stayed %d", gogc())
}

var kept [][]byte

// The pacer follows the live heap from one collection to the next: high
// while the heap is small, lower once what is live nears the budget, high
// again once it is small again; and it leaves GOGC alone once stopped.
func TestStartFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const mib = 1 << 20
	stop := Start(64*mib, 80, 150)
	assert.Equal(t, 150, gogc(), "high until a collection says otherwise")
	collectUntil(t, func() bool { return gogc() == 150 }, "a small heap keeps GOGC high")

	// 48 MiB live (pointer-free, so that marking it costs nothing): 64/48
	// is 1.33 times, under 1.8, so GOGC goes down to 80.
	for range 48 {
		kept = append(kept, make([]byte, mib))
	}
	collectUntil(t, func() bool { return gogc() == 80 }, "a heap near the budget lowers GOGC")

	kept = nil
	collectUntil(t, func() bool { return gogc() == 150 }, "a heap small again raises it")

	stop()
	debug.SetGCPercent(120)
	for range 48 {
		kept = append(kept, make([]byte, mib))
	}
	for range 5 {
		runtime.GC()
	}
	kept = nil
	assert.Equal(t, 120, gogc(), "stopped: GOGC is left as it is")
}
