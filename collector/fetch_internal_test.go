package collector

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/semaphore"
)

// A pick is let go of only once its worker has set it: before that, the
// worker may still write to it.
func TestAPickIsDroppedOnlyOnceReady(t *testing.T) {
	f := &flight{done: make(chan struct{})}
	p := pick{ready: make(chan struct{}), f: f}
	p.drop()
	assert.Same(t, f, p.f, "not ready: kept")
	assert.NotNil(t, p.ready)

	close(p.ready)
	p.drop()
	assert.Equal(t, pick{}, p, "ready: its flight and channel let go of")
}

// An app's other call runs beside its first on a free slot, which it
// gives back; with no free slot, it runs at once on the caller's slot, or,
// when asked to wait (the last apps of a request), on the next slot to
// free up or after the caller's own call, whichever comes first, and only
// once.
func TestACallBesideTakesAFreeSlotOrWaitsForOneWhenAsked(t *testing.T) {
	sem := semaphore.NewWeighted(1)
	f := &flight{}

	ran := make(chan struct{})
	f.beside(sem, false, func() {
		assert.False(t, sem.TryAcquire(1), "made on the free slot")
		close(ran)
	})
	<-ran
	f.calls.Wait()
	require.True(t, sem.TryAcquire(1), "the slot is given back")

	// The test holds the only slot from here, as a caller making its own
	// call does.
	now := false
	f.beside(sem, false, func() { now = true })
	assert.True(t, now, "no free slot: made before beside returns")

	// A slot frees up first: the call is made on it.
	var made atomic.Int32
	waited := make(chan struct{})
	f.beside(sem, true, func() { made.Add(1); close(waited) })
	select {
	case <-waited:
		t.Fatal("made without a slot")
	default:
	}
	sem.Release(1) // another call ends
	<-waited
	f.claimWaiting() // the caller's own call ends: nothing left to make
	f.calls.Wait()
	assert.Equal(t, int32(1), made.Load(), "made once")
	require.True(t, sem.TryAcquire(1), "the slot it waited for is given back")

	// The caller's own call ends first: the call is made on its slot.
	f = &flight{}
	made.Store(0)
	f.beside(sem, true, func() { made.Add(1) })
	f.claimWaiting()
	assert.Equal(t, int32(1), made.Load(), "made by the caller, before claimWaiting returns")
	f.calls.Wait()
	assert.Equal(t, int32(1), made.Load(), "and only by it")
	assert.False(t, sem.TryAcquire(1), "the caller still holds its slot; none was taken or given back")
	sem.Release(1)
}
