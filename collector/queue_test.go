package collector

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idle reports whether the queue has no worker and no task left.
func (q *workQueue) idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.workers == 0 && q.head == 0 && len(q.tasks) == 0
}

func TestWorkQueueRunsTasksInQueueOrder(t *testing.T) {
	var q workQueue
	q.setLimit(1)
	const n = 5000 // enough for the queue to compact itself while busy
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	tasks := make([]func(), n)
	for i := range tasks {
		wg.Add(1)
		tasks[i] = func() {
			defer wg.Done()
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		}
	}
	for chunk := range slices.Chunk(tasks, 700) {
		q.push(chunk)
	}
	wg.Wait()
	require.Len(t, order, n)
	assert.True(t, slices.IsSorted(order), "tasks ran in the order they were queued")
	assert.Eventually(t, q.idle, time.Second, time.Millisecond, "the worker ends and the queue empties")
}

func TestWorkQueueUsesAtMostLimitWorkers(t *testing.T) {
	var q workQueue
	q.setLimit(3)
	var (
		running, most atomic.Int32
		wg            sync.WaitGroup
		ran           atomic.Int32
		release       = make(chan struct{})
		held          sync.WaitGroup
	)
	held.Add(3)
	tasks := make([]func(), 300)
	for i := range tasks {
		wg.Add(1)
		tasks[i] = func() {
			defer wg.Done()
			r := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
			}
			if i < 3 {
				held.Done() // the first three hold their workers until all three run
				<-release
			}
			ran.Add(1)
		}
	}
	q.push(tasks[:100])
	held.Wait()
	q.push(tasks[100:])
	close(release)
	wg.Wait()
	assert.Equal(t, int32(3), most.Load())
	assert.Equal(t, int32(300), ran.Load())
	assert.Eventually(t, q.idle, time.Second, time.Millisecond)

	// A lower limit takes effect as workers finish their task.
	q.setLimit(1)
	most.Store(0)
	for i := range tasks {
		wg.Add(1)
		tasks[i] = func() {
			defer wg.Done()
			r := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
			}
			time.Sleep(time.Microsecond)
		}
	}
	q.push(tasks)
	wg.Wait()
	assert.Equal(t, int32(1), most.Load())
}
