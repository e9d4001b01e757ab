package collector

import (
	"slices"
	"time"
)

// Session lifecycle, as observed at fetch time: consecutive successful lists of an app are compared. A session listed
// for the first time has started; one listed before and not now has ended.

// seenSession is one entry of a list: its ID and the record's own start time (zero when it has none).
type seenSession struct {
	id    string
	start time.Time
}

// tracked is a session followed across fetches; start is the record's start time, else when first listed.
type tracked struct{ start, firstSeen, lastSeen time.Time }

// lifecycle is an app's sessions as last listed, and what was observed.
type lifecycle struct {
	baseline  bool // a list was seen: later new sessions have started
	whole     bool // the last list was not cut: a session not in it has started
	active    map[string]tracked
	lastAt    time.Time // time and length of the last list, for the
	lastCount int       // integral of active sessions over time

	started, ended, untracked uint64
	seconds                   float64   // session-seconds
	buckets                   [8]uint64 // ended sessions' durations, cumulative per sessionDurationBuckets
	sum                       float64   // and their sum (their count is ended)
}

// observe compares a successful list of total entries, fetched at now and starting with list, with the one before (the
// first is the baseline). At most limit sessions with an ID are followed: a list cut there (or by the fetch: cut) ends
// none.
func (l *lifecycle) observe(list []seenSession, total int, cut bool, now time.Time, limit int) {
	l.untracked += uint64(max(total-len(list), 0))
	if dt := now.Sub(l.lastAt).Seconds(); l.baseline && dt > 0 {
		// Trapezoid: sessions listed at both ends count for the whole
		// interval, those listed at one end only for half of it.
		l.seconds += float64(l.lastCount+total) / 2 * dt
	}
	next := make(map[string]tracked, len(list))
	for _, s := range list {
		if s.id == "" || len(next) >= limit {
			l.untracked, cut = l.untracked+1, cut || s.id != ""
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
			if l.baseline && l.whole {
				l.started++
			}
		}
		t.lastSeen = now
		next[s.id] = t
	}
	for id, t := range l.active {
		if _, still := next[id]; !still && !cut {
			d := max(t.lastSeen.Sub(t.start).Seconds(), 0) // 0 when the clock stepped back: the sum never goes down
			for i := slices.IndexFunc(sessionDurationBuckets, func(le float64) bool { return d <= le }); i >= 0 && i < len(l.buckets); i++ {
				l.buckets[i]++
			}
			l.ended, l.sum = l.ended+1, l.sum+d
		}
	}
	l.active, l.lastAt, l.lastCount, l.baseline, l.whole = next, now, total, true, !cut
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
