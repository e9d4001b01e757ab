package client

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deadlineOf returns ctx's deadline, failing when it has none.
func deadlineOf(t *testing.T, ctx context.Context) time.Time {
	t.Helper()
	d, ok := ctx.Deadline()
	require.True(t, ok, "the context has a deadline")
	return d
}

func TestCallsBegunTogetherShareOneDeadline(t *testing.T) {
	tr := &Transport{Timeout: time.Hour}
	before := time.Now()
	a, cancelA := tr.callContext(context.Background())
	b, cancelB := tr.callContext(context.Background())
	after := time.Now()
	cancelA()
	cancelB()

	assert.Same(t, a, b, "one context for calls begun within the slack of the timeout")
	assert.NoError(t, a.Err(), "a call's end does not end the calls that share its context")
	end := deadlineOf(t, a)
	assert.False(t, end.Before(before.Add(time.Hour)), "never sooner than the timeout")
	assert.False(t, end.After(after.Add(time.Hour+time.Hour/deadlineSlack)), "at most the slack later")
}

func TestACallBegunAfterTheWindowGetsALaterDeadline(t *testing.T) {
	tr := &Transport{Timeout: time.Millisecond}
	a, _ := tr.callContext(context.Background())
	time.Sleep(2 * time.Millisecond) // past a's deadline, whatever the speed
	before := time.Now()
	b, _ := tr.callContext(context.Background())

	assert.NotSame(t, a, b)
	assert.False(t, deadlineOf(t, b).Before(before.Add(time.Millisecond)), "never sooner than the timeout")
	<-a.Done() // a shared context ends at its deadline on its own
	assert.ErrorIs(t, a.Err(), context.DeadlineExceeded)
}

func TestACallerWhoseContextCanEndGetsADeadlineOfItsOwn(t *testing.T) {
	tr := &Transport{Timeout: time.Hour}
	shared, _ := tr.callContext(context.Background())
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()

	before := time.Now()
	own, cancel := tr.callContext(parent)
	assert.NotSame(t, shared, own)
	assert.False(t, deadlineOf(t, own).Before(before.Add(time.Hour)))
	cancel()
	assert.ErrorIs(t, own.Err(), context.Canceled, "its call's end ends it")
	assert.NoError(t, parent.Err())

	// A context with values gets one of its own too: the shared one
	// would drop them.
	type key struct{}
	valued := context.WithValue(context.Background(), key{}, "v")
	ctx, cancel := tr.callContext(valued)
	defer cancel()
	assert.Equal(t, "v", ctx.Value(key{}))
	assert.NotSame(t, shared, ctx)
}

func TestWithoutATimeoutTheCallersContextIsKept(t *testing.T) {
	tr := &Transport{}
	ctx, cancel := tr.callContext(context.Background())
	defer cancel()
	_, ok := ctx.Deadline()
	assert.False(t, ok)
}

// A shorter timeout than that of the shared context gets a context of its
// own: never more than 1% later than its own deadline.
func TestAShorterTimeoutDoesNotShareALongerDeadline(t *testing.T) {
	tr := &Transport{Timeout: time.Hour}
	long, _ := tr.callContext(context.Background())
	tr.Timeout = time.Second
	begun := time.Now()
	short, _ := tr.callContext(context.Background())
	returned := time.Now()

	assert.NotSame(t, long, short)
	end := deadlineOf(t, short)
	assert.False(t, end.Before(begun.Add(time.Second)), "never sooner than the timeout")
	assert.False(t, end.After(returned.Add(time.Second+time.Second/deadlineSlack)), "at most the slack later")
}
