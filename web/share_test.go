package web

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatherer is a Gatherer whose gatherings the test starts, sees begin and
// ends: each returns one family named after the gatherer.
type gatherer struct {
	name    string
	began   chan struct{} // a value per gathering begun
	release chan struct{} // a gathering ends when it receives
}

func newGatherer(name string, blocking bool) *gatherer {
	g := &gatherer{name: name, began: make(chan struct{}, 10), release: make(chan struct{})}
	if !blocking {
		close(g.release)
	}
	return g
}

func (g *gatherer) Gather() ([]*dto.MetricFamily, error) {
	g.began <- struct{}{}
	<-g.release
	return []*dto.MetricFamily{{Name: &g.name}}, nil
}

// gathered is the outcome of a gathering started by start.
type gathered struct {
	mfs []*dto.MetricFamily
	err error
}

// start gathers in the background with a deadline timeout from now.
func start(ctx context.Context, s *sharedGathering, timeout time.Duration, own *gatherer) (<-chan gathered, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return gatherAsync(ctx, s, 0, own), cancel
}

// gatherAsync gathers on ctx in the background, under the configuration
// config.
func gatherAsync(ctx context.Context, s *sharedGathering, config uint64, own *gatherer) <-chan gathered {
	out := make(chan gathered, 1)
	go func() {
		mfs, err := s.gather(ctx, config, own)
		out <- gathered{mfs, err}
	}()
	return out
}

// within returns what ch delivers, and fails the test when nothing arrives
// within hangTimeout.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangTimeout):
		require.FailNow(t, what)
		var zero T
		return zero
	}
}

// waitBegun waits until g has begun a gathering.
func waitBegun(t *testing.T, g *gatherer) {
	t.Helper()
	within(t, g.began, "the gathering did not begin")
}

// lead starts a gathering that lasts until the test releases first, with
// an hour's deadline, and waits until it has begun.
func lead(t *testing.T, s *sharedGathering) (first *gatherer, a <-chan gathered, cancelA context.CancelFunc) {
	t.Helper()
	first = newGatherer("first", true)
	a, cancelA = start(t.Context(), s, time.Hour, first)
	t.Cleanup(cancelA)
	waitBegun(t, first)
	return first, a, cancelA
}

// joined waits until n requests wait for the gathering under way.
func joined(t *testing.T, s *sharedGathering, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.cur != nil && s.cur.joined == n
	}, hangTimeout, time.Millisecond)
}

// names waits for the outcome of a gathering and returns the names of its
// families.
func names(t *testing.T, ch <-chan gathered) []string {
	t.Helper()
	r := within(t, ch, "the gathering did not end")
	require.NoError(t, r.err)
	var out []string
	for _, mf := range r.mfs {
		out = append(out, mf.GetName())
	}
	return out
}

func TestRequestsWithLaterDeadlinesShareTheGatheringUnderWay(t *testing.T) {
	var s sharedGathering
	first, a, _ := lead(t, &s)
	second, third := newGatherer("second", true), newGatherer("third", true)
	b, cancelB := start(t.Context(), &s, 2*time.Hour, second)
	defer cancelB()
	c, cancelC := start(t.Context(), &s, 2*time.Hour, third)
	defer cancelC()
	joined(t, &s, 2)

	close(first.release)
	for _, r := range []<-chan gathered{a, b, c} {
		assert.Equal(t, []string{"first"}, names(t, r))
	}
	assert.Empty(t, second.began, "the second request did not gather")
	assert.Empty(t, third.began, "nor the third")

	// Once it has ended, the next request gathers anew.
	d, cancelD := start(t.Context(), &s, time.Hour, newGatherer("fourth", false))
	defer cancelD()
	assert.Equal(t, []string{"fourth"}, names(t, d))
}

func TestRequestWithAnEarlierDeadlineGathersOnItsOwn(t *testing.T) {
	var s sharedGathering
	first, a, _ := lead(t, &s)
	b, cancelB := start(t.Context(), &s, time.Minute, newGatherer("second", false))
	defer cancelB()
	assert.Equal(t, []string{"second"}, names(t, b), "answered while the first still gathers")
	close(first.release)
	assert.Equal(t, []string{"first"}, names(t, a))
}

func TestWaitEndsAtTheRequestsOwnDeadline(t *testing.T) {
	var s sharedGathering
	first, a, _ := lead(t, &s)
	second := newGatherer("second", false)
	// The second one's context ends (as its deadline would) while it
	// waits: it gathers on its own rather than wait on.
	ctx, cancel := context.WithCancel(t.Context())
	b, cancelB := start(ctx, &s, 2*time.Hour, second)
	defer cancelB()
	joined(t, &s, 1)
	cancel()
	assert.Equal(t, []string{"second"}, names(t, b))
	close(first.release)
	assert.Equal(t, []string{"first"}, names(t, a))
}

func TestGatheringCutShortByItsClientIsNotShared(t *testing.T) {
	var s sharedGathering
	first, a, cancelA := lead(t, &s)
	b, cancelB := start(t.Context(), &s, 2*time.Hour, newGatherer("second", false))
	defer cancelB()
	joined(t, &s, 1)
	cancelA() // the first request's client leaves during the gathering
	close(first.release)
	assert.Equal(t, []string{"first"}, names(t, a))
	assert.Equal(t, []string{"second"}, names(t, b), "gathered on its own")
}

// A gathering during which its request's deadline passed may lack apps it
// gave up on: a request with a later deadline is not answered with it. The
// gathering ends when the test releases it, once its context has ended
// with its deadline, whatever the machine's speed.
func TestGatheringPastItsDeadlineIsNotShared(t *testing.T) {
	var s sharedGathering
	first := newGatherer("first", true)
	ctxA, cancelA := context.WithTimeout(t.Context(), MinScrapeTimeout)
	defer cancelA()
	a := gatherAsync(ctxA, &s, 0, first)
	waitBegun(t, first)
	b, cancelB := start(t.Context(), &s, time.Hour, newGatherer("second", false))
	defer cancelB()
	joined(t, &s, 1)
	<-ctxA.Done()
	require.ErrorIs(t, ctxA.Err(), context.DeadlineExceeded)
	close(first.release) // the first gathering ends after its deadline: cut short
	assert.Equal(t, []string{"first"}, names(t, a))
	assert.Equal(t, []string{"second"}, names(t, b), "gathered on its own")
}

func TestGatheringUnderAnotherConfigurationIsNotShared(t *testing.T) {
	var s sharedGathering
	first := newGatherer("first", true)
	ctxA, cancelA := context.WithTimeout(t.Context(), time.Hour)
	defer cancelA()
	a := gatherAsync(ctxA, &s, 1, first)
	waitBegun(t, first)
	ctxB, cancelB := context.WithTimeout(t.Context(), 2*time.Hour)
	defer cancelB()
	b := gatherAsync(ctxB, &s, 2, newGatherer("second", false))
	assert.Equal(t, []string{"second"}, names(t, b), "answered while the first still gathers: a configuration was applied since it began")
	close(first.release)
	assert.Equal(t, []string{"first"}, names(t, a))
}

func TestPanickingGatheringReleasesItsWaiters(t *testing.T) {
	var s sharedGathering
	panicking := make(chan struct{})
	began := make(chan struct{})
	leader := make(chan any, 1)
	go func() {
		defer func() { leader <- recover() }()
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		_, _ = s.gather(ctx, 0, gatherFunc(func() ([]*dto.MetricFamily, error) {
			close(began)
			<-panicking
			panic("collector bug")
		}))
	}()
	within(t, began, "the gathering did not begin")
	b, cancelB := start(t.Context(), &s, 2*time.Hour, newGatherer("second", false))
	defer cancelB()
	joined(t, &s, 1)
	close(panicking)
	assert.Equal(t, "collector bug", within(t, leader, "the panicking gathering did not end"))
	assert.Equal(t, []string{"second"}, names(t, b), "gathered on its own")
}

func TestRequestWithoutDeadlineGathersOnItsOwn(t *testing.T) {
	var s sharedGathering
	first, a, _ := lead(t, &s)
	mfs, err := s.gather(t.Context(), 0, newGatherer("second", false))
	require.NoError(t, err)
	assert.Equal(t, "second", mfs[0].GetName())
	close(first.release)
	assert.Equal(t, []string{"first"}, names(t, a))
}

type gatherFunc func() ([]*dto.MetricFamily, error)

func (f gatherFunc) Gather() ([]*dto.MetricFamily, error) { return f() }
