package collector

import (
	"slices"
	"time"
)

// Session lifecycle, as observed at fetch time: the platform only says
// which sessions are active now (getconcurrentList), so consecutive
// successful lists of an app are compared. A session listed for the first
// time has started; one listed before and not now has ended. Sessions
// shorter than the time between two fetches are never seen.

// seenSession is one entry of a session list, as far as the lifecycle
// needs it.
type seenSession struct {
	id    string
	start time.Time // the record's own start time; zero when it has none
}

// tracked is a session followed across fetches.
type tracked struct {
	start     time.Time // the record's start time, else when first listed
	firstSeen time.Time // when first listed
	lastSeen  time.Time
}

// lifecycle is an app's sessions as last listed, and what was observed of
// them so far.
type lifecycle struct {
	baseline bool // a list was seen: later new sessions have started
	active   map[string]tracked
	// lastAt and lastCount are the time and the length of the last list,
	// for the integral of active sessions over time.
	lastAt    time.Time
	lastCount int

	started, ended uint64
	seconds        float64 // session-seconds
	untracked      uint64  // sessions left unfollowed: over the cap, or without an ID
	// The ended sessions' durations: count per bucket of
	// sessionDurationBuckets (not cumulative), the +Inf count and the sum.
	buckets     [8]uint64
	count       uint64
	durationSum float64
}

// observe compares a successful list, fetched at now, with the one before.
// The first list after a start (or after the app was added) is the
// baseline. Only sessions with an ID are followed, at most limit of them;
// list holds the first entries of a list of total.
func (l *lifecycle) observe(list []seenSession, total int, now time.Time, limit int) {
	l.untracked += uint64(max(total-len(list), 0))
	if l.baseline {
		// Trapezoid: sessions listed at both ends count for the whole
		// interval, those listed at one end only for half of it.
		if dt := now.Sub(l.lastAt).Seconds(); dt > 0 {
			l.seconds += float64(l.lastCount+total) / 2 * dt
		}
	}
	next := make(map[string]tracked, len(list))
	for _, s := range list {
		if s.id == "" || len(next) >= limit {
			l.untracked++
			continue
		}
		if _, dup := next[s.id]; dup {
			continue
		}
		t, known := l.active[s.id]
		if !known {
			t.start, t.firstSeen = now, now
			if !s.start.IsZero() && !s.start.After(now) {
				t.start = s.start
			}
			if l.baseline {
				l.started++
			}
		}
		t.lastSeen = now
		next[s.id] = t
	}
	for id, t := range l.active {
		if _, still := next[id]; !still {
			l.ended++
			l.observeDuration(t.lastSeen.Sub(t.start).Seconds())
		}
	}
	l.active, l.lastAt, l.lastCount, l.baseline = next, now, total, true
}

func (l *lifecycle) observeDuration(d float64) {
	if i, _ := slices.BinarySearch(sessionDurationBuckets, d); i < len(l.buckets) {
		l.buckets[i]++
	}
	l.count++
	l.durationSum += d
}

// cumulativeBuckets returns the duration histogram's buckets as
// MustNewConstHistogram wants them.
func (l *lifecycle) cumulativeBuckets() map[float64]uint64 {
	out := make(map[float64]uint64, len(sessionDurationBuckets))
	var n uint64
	for i, le := range sessionDurationBuckets {
		n += l.buckets[i]
		out[le] = n
	}
	return out
}

// oldestAge is the age of the oldest active session at now; 0 when none.
func (l *lifecycle) oldestAge(now time.Time) float64 {
	var oldest time.Time
	for _, t := range l.active {
		if oldest.IsZero() || t.start.Before(oldest) {
			oldest = t.start
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return max(now.Sub(oldest).Seconds(), 0)
}
