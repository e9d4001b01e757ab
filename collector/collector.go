package collector

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// scrape is the collector of one scrape: it fetches every app at once and
// reports each app's outcome on its own, so that one failing app never
// fails the scrape or touches another app's series.
type scrape struct {
	e       *Exporter
	ctx     context.Context
	names   []string
	arrived time.Time // when its request arrived
}

// Describe implements prometheus.Collector.
func (s *scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
	s.e.durations.Describe(ch)
}

// Collect implements prometheus.Collector.
func (s *scrape) Collect(ch chan<- prometheus.Metric) {
	apps, set := s.e.snapshot(s.names)
	s.e.fetchAll(s.ctx, s.arrived, apps, set, func(st *appState, r *result) { collectApp(ch, st, r, s.e.now()) })
}

// collectApp sends the series of one app. Values the platform did not give
// in this fetch are left out rather than reported as 0.
func collectApp(ch chan<- prometheus.Metric, st *appState, r *result, now time.Time) {
	appGauge := func(d *prometheus.Desc, v float64) { ch <- &sample{d, st.pairs, false, v} }
	appCounter := func(d *prometheus.Desc, v float64) { ch <- &sample{d, st.pairs, true, v} }
	v := st.view(now)
	appGauge(upDesc, boolValue(r.up()))
	ch <- &sample{appInfoDesc, v.infoPairs, false, 1}
	appGauge(scrapeDurationDesc, r.duration.Seconds())
	if r.conc != nil {
		appGauge(limitDesc, float64(r.conc.TotalConcurrentNumber))
		appGauge(inUseDesc, float64(r.conc.UserConcurrentNumber))
	}
	if r.sessErr == nil {
		appGauge(activeSessionsDesc, float64(r.sessions))
		appGauge(sessionsWithoutConversationDesc, float64(r.noConv))
	}
	reasons := make([]string, 0, len(v.errs))
	for reason := range v.errs {
		reasons = append(reasons, reason)
	}
	slices.Sort(reasons)
	for _, reason := range reasons {
		ch <- prometheus.MustNewConstMetric(scrapeErrorsDesc, prometheus.CounterValue, float64(v.errs[reason]), st.name, reason)
	}
	if l := v.life; l != nil {
		appCounter(sessionsStartedDesc, float64(l.started))
		appCounter(sessionsEndedDesc, float64(l.ended))
		appCounter(sessionSecondsDesc, l.seconds)
		if l.baseline {
			appGauge(oldestSessionAgeDesc, l.oldestAge)
		}
		if l.untracked > 0 {
			appCounter(sessionsUntrackedDesc, float64(l.untracked))
		}
		ch <- v.durations
	}
	if until := st.client().RetryAfter(); !until.IsZero() {
		appGauge(rateLimitedUntilDesc, float64(until.UnixMilli())/1e3)
	}
	for _, cv := range v.conversations {
		if cv.known {
			ch <- &sample{conversationMaxDesc, cv.pairs, false, float64(cv.maxConv)}
			ch <- &sample{conversationInfoDesc, cv.infoPairs, false, 1}
			ch <- &sample{conversationRefreshDesc, cv.pairs, false, float64(cv.refreshed.UnixMilli()) / 1e3}
		}
		// A count is only known when every entry names its conversation:
		// an entry without one may belong to any.
		if r.sessErr == nil && r.noConv == 0 {
			ch <- &sample{conversationSessionsDesc, cv.pairs, false, float64(r.conversationSessions(cv.id))}
		}
	}
}

// sample is a gauge, or a counter, whose label pairs were built once, when
// its app or conversation was configured (for the info metrics, when their
// values changed), and are shared by every scrape (the registry treats a
// metric's label pairs as immutable). It stands in
// for a const metric, which builds its label pairs at every scrape: at 1000
// apps, that was 14% of the bytes the exporter allocated per scrape in
// `make load` (docs/performance.md).
type sample struct {
	desc    *prometheus.Desc
	pairs   []*dto.LabelPair // sorted by name, see labelPairs
	counter bool
	v       float64
}

// Desc implements prometheus.Metric.
func (s *sample) Desc() *prometheus.Desc { return s.desc }

// Write implements prometheus.Metric. A whole number below sharedValues
// (up, info, counts of sessions and allowances: most samples) gets an
// immutable value shared by every sample that has it; another value is
// allocated with its Gauge (or Counter) rather than pointed to in the
// sample, so that the sample is garbage once written. The registry holds
// every written metric until the answer is encoded: at 5000 apps, the
// values it held were 3.1 MB of a scrape's peak heap, and the samples it
// kept alive before that 2.6 MB (docs/performance.md).
func (s *sample) Write(out *dto.Metric) error {
	out.Label = s.pairs
	i := int(s.v)
	shared := s.v >= 0 && s.v < sharedValues && float64(i) == s.v
	switch {
	case s.counter && shared:
		out.Counter = &sharedCounters[i].c
	case s.counter:
		c := &counterValue{v: s.v}
		c.c.Value = &c.v
		out.Counter = &c.c
	case shared:
		out.Gauge = &sharedGauges[i].g
	default:
		g := &gaugeValue{v: s.v}
		g.g.Value = &g.v
		out.Gauge = &g.g
	}
	return nil
}

// gaugeValue and counterValue are a dto value and the float it points to,
// in one allocation.
type (
	gaugeValue struct {
		g dto.Gauge
		v float64
	}
	counterValue struct {
		c dto.Counter
		v float64
	}
)

// sharedValues bounds the whole numbers whose values are shared. Nothing
// writes to a written metric (encoding only reads it; the protobuf one
// updates its size caches atomically), so that sharing one is safe.
const sharedValues = 1024

// sharedGauges and sharedCounters hold the values 0 to sharedValues-1.
var sharedGauges, sharedCounters = func() (g *[sharedValues]gaugeValue, c *[sharedValues]counterValue) {
	g, c = new([sharedValues]gaugeValue), new([sharedValues]counterValue)
	for i := range sharedValues {
		g[i].v, c[i].v = float64(i), float64(i)
		g[i].g.Value, c[i].c.Value = &g[i].v, &c[i].v
	}
	return g, c
}()

// The label names of samples, which their pairs point to.
var (
	labelApp, labelAppID, labelCorpID, labelConversationID = "app", "app_id", "corp_id", "conversation_id"
	labelLanguage, labelModelName, labelName, labelTTSName = "language", "model_name", "name", "tts_name"
)

// labelPair is the pair of a label name (one of the above) and a value;
// a value from the platform must have been through labelValue. A pair may
// be shared by the pairs of several samples. The pair and its value are
// one allocation.
func labelPair(name *string, value string) *dto.LabelPair {
	return &newPair(name, value).p
}

// pair is a label pair with the value it points to.
type pair struct {
	p dto.LabelPair
	v string
}

func newPair(name *string, value string) *pair {
	lp := &pair{v: value}
	lp.p.Name, lp.p.Value = name, &lp.v
	return lp
}

// sharedPair returns the pair of a value that apps or conversations may
// have in common (a corp ID, a language, a model, a voice, a name): one
// pair, held by every sample that has it, as long as one does. At 5000
// apps with one conversation each, the live heap between scrapes went from
// 15 to 12 MB (docs/performance.md).
func sharedPair(name *string, value string) *dto.LabelPair {
	k := pairKey{name, value}
	sharedPairs.mu.Lock()
	defer sharedPairs.mu.Unlock()
	if lp := sharedPairs.m[k].Value(); lp != nil {
		return &lp.p
	}
	lp := newPair(name, value)
	w := weak.Make(lp)
	sharedPairs.m[k] = w
	runtime.AddCleanup(lp, func(k pairKey) {
		sharedPairs.mu.Lock()
		defer sharedPairs.mu.Unlock()
		if sharedPairs.m[k] == w { // not since replaced
			delete(sharedPairs.m, k)
		}
	}, k)
	return &lp.p
}

type pairKey struct {
	name  *string
	value string
}

// sharedPairs are the pairs handed out by sharedPair and still held.
var sharedPairs = struct {
	mu sync.Mutex
	m  map[pairKey]weak.Pointer[pair]
}{m: map[pairKey]weak.Pointer[pair]{}}

// labelPairs sorts pairs by name, as the registry wants them.
func labelPairs(pairs ...*dto.LabelPair) []*dto.LabelPair {
	slices.SortFunc(pairs, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	return pairs
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// maxLabelValue bounds a label value that comes from the platform.
const maxLabelValue = 256

// labelValue makes a value from the platform a valid, bounded label value.
func labelValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxLabelValue {
		s = strings.ToValidUTF8(s[:maxLabelValue], "")
	}
	return s
}
