package simulator

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChurnCallLengths steps the churn by hand, tick by tick: calls last 20
// to 200 ticks, or never end (at most one per app at a time), and the
// allowance is reached but never exceeded.
func TestChurnCallLengths(t *testing.T) {
	s, apps := NewDemo()
	c := churn{s: s, rng: rand.New(rand.NewPCG(1, 2)), apps: map[string]*churnApp{}}
	type life struct{ from, to int }
	lives := map[string]*life{}           // by app ID + session ID
	open := map[string]map[string]*life{} // by app ID: the lives not ended yet
	reached := map[string]bool{}
	const ticks = 5000
	for tick := range ticks {
		for _, a := range apps {
			c.step(a.AppID, tick)
			st := s.app(a.AppID)
			list := st.list()
			allowance := st.settings.Load().Allowance
			require.LessOrEqual(t, len(list), allowance)
			if len(list) == allowance {
				reached[a.Name] = true
			}
			seen := map[string]bool{}
			stuck := 0
			for _, ss := range list {
				key := a.AppID + "/" + ss.ID
				seen[key] = true
				if lives[key] == nil {
					lives[key] = &life{from: tick, to: -1}
					if open[a.AppID] == nil {
						open[a.AppID] = map[string]*life{}
					}
					open[a.AppID][key] = lives[key]
				}
				if c.apps[a.AppID].ends[ss.ID] < 0 {
					stuck++
				}
			}
			require.LessOrEqual(t, stuck, 1, "at most one never-ending call per app")
			for key, l := range open[a.AppID] {
				if !seen[key] {
					l.to = tick
					delete(open[a.AppID], key)
				}
			}
		}
	}
	ended, never := 0, 0
	for key, l := range lives {
		switch {
		case l.to >= 0:
			ended++
			if l.from > 0 { // the demo's first sessions were there before tick 0
				assert.GreaterOrEqual(t, l.to-l.from, churnMinTicks, key)
			}
			assert.LessOrEqual(t, l.to-l.from, churnMaxTicks+1, key)
		case ticks-l.from > churnMaxTicks+1:
			never++
		}
	}
	assert.Greater(t, ended, 100, "calls start and end")
	assert.Positive(t, never, "some calls never end")
	assert.Len(t, reached, len(apps), "every app reaches its allowance now and then")
}
