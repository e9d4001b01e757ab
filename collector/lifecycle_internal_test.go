package collector

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestLifecycleRules(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	list := func(ids ...string) []seenSession {
		out := make([]seenSession, len(ids))
		for i, id := range ids {
			out[i] = seenSession{id: id}
		}
		return out
	}

	t.Run("a session that vanishes and reappears is a new one", func(t *testing.T) {
		var l lifecycle
		l.observe(list("x"), 1, false, at(0), 10)
		l.observe(list(), 0, false, at(10), 10)
		l.observe(list("x"), 1, false, at(20), 10)
		assert.Equal(t, uint64(1), l.started)
		assert.Equal(t, uint64(1), l.ended)
		assert.Equal(t, 0.0, l.oldestAge(at(20)), "its start is when it was listed again")
	})
	t.Run("state is capped and what overflows is counted", func(t *testing.T) {
		var l lifecycle
		l.observe(list("a", "b", "c"), 5, true, at(0), 2) // 3 of 5 kept by the fetch, 2 followed
		assert.Len(t, l.active, 2)
		assert.Equal(t, uint64(3), l.untracked)
		l.observe(list("a", "b", "c"), 5, true, at(10), 2)
		assert.Equal(t, uint64(0), l.ended, "sessions over the cap neither start nor end")
		assert.Equal(t, uint64(0), l.started)
		assert.Equal(t, 50.0, l.seconds, "session-seconds count every listed entry")
	})
	t.Run("a list cut at the cap ends none, and the list after it starts none", func(t *testing.T) {
		var l lifecycle
		l.observe(list("a", "b"), 3, true, at(0), 2)  // the baseline; one past the cap
		l.observe(list("b", "c"), 3, true, at(10), 2) // a may still be listed past the cap
		l.observe(list("c", "a"), 3, true, at(20), 2) // as c and a may have been
		assert.Zero(t, l.started)
		assert.Zero(t, l.ended)
		l.observe(list("a", "b"), 2, false, at(30), 2) // whole: c ended; b was listed before
		assert.Zero(t, l.started)
		assert.Equal(t, uint64(1), l.ended)
		l.observe(list("a", "b", "d"), 3, false, at(40), 3) // after a whole list: d started
		assert.Equal(t, uint64(1), l.started)
	})
	t.Run("a clock stepped back ends a session with a duration of 0, never below", func(t *testing.T) {
		var l lifecycle
		l.observe([]seenSession{{id: "a", start: at(-5)}}, 1, false, at(0), 10)
		l.observe(list("a"), 1, false, at(-600), 10) // the clock went back ten minutes
		assert.Equal(t, 0.0, l.oldestAge(at(-600)), "an age is never below 0")
		l.observe(list(), 0, false, at(-590), 10)
		assert.Equal(t, uint64(1), l.ended)
		assert.Equal(t, 0.0, l.sum, "a histogram's sum never goes down")
		assert.Equal(t, uint64(1), l.buckets[0])
	})
	t.Run("records without an ID are not followed", func(t *testing.T) {
		var l lifecycle
		l.observe([]seenSession{{id: ""}, {id: "a"}}, 2, false, at(0), 10)
		assert.Len(t, l.active, 1)
		assert.Equal(t, uint64(1), l.untracked)
	})
	t.Run("a start time from the record is used, unless it is in the future", func(t *testing.T) {
		var l lifecycle
		l.observe([]seenSession{{id: "a", start: at(-100)}, {id: "b", start: at(100)}}, 2, false, at(0), 10)
		assert.Equal(t, 100.0, l.oldestAge(at(0)))
		l.observe([]seenSession{{id: "b", start: at(100)}}, 1, false, at(50), 10)
		assert.Equal(t, 50.0, l.oldestAge(at(50)), "b started when it was first listed")
		l.observe(nil, 0, false, at(60), 10)
		assert.Equal(t, 0.0, l.oldestAge(at(60)))
		assert.Equal(t, 150.0, l.sum, "a lasted 100 s to its last listing, b 50 s from its first")
	})
	t.Run("a session listed twice is one", func(t *testing.T) {
		var l lifecycle
		l.observe(list("x"), 1, false, at(0), 10)
		l.observe(list("x", "y", "y"), 3, false, at(10), 10)
		assert.Equal(t, uint64(1), l.started)
		assert.Len(t, l.active, 2)
	})
}
