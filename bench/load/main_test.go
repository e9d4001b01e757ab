package main

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProcFigures(t *testing.T) {
	pid := os.Getpid()
	before, err := cpuSeconds(pid)
	require.NoError(t, err)
	for start := time.Now(); time.Since(start) < 150*time.Millisecond; {
		runtime.Gosched() // burn CPU time of our own
	}
	after, err := cpuSeconds(pid)
	require.NoError(t, err)
	assert.Greater(t, after, before)

	hwm, rss, err := memory(pid)
	require.NoError(t, err)
	assert.Positive(t, rss)
	assert.GreaterOrEqual(t, hwm, rss)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	assert.Less(t, uint64(rss), ms.Sys+(512<<20), "RSS is in bytes")
}

func TestCheckUp(t *testing.T) {
	body := []byte("# HELP duix_up x\n# TYPE duix_up gauge\nduix_up{app=\"a\"} 1\nduix_up{app=\"b\"} 1\nduix_upx 1\n")
	assert.NoError(t, checkUp(body, 2))
	assert.Error(t, checkUp(body, 3))
	assert.Error(t, checkUp([]byte("# x\nduix_up{app=\"a\"} 1\nduix_up{app=\"b\"} 0\n"), 2))
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
