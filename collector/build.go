package collector

import (
	"sort"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"

	"github.com/duix-exporter/duix_exporter/client"
)

// builder turns the apps' results into metric families for one scrape,
// directly in the form an exposition needs: apps are added in name order
// and the samples of each app in label order, so every family comes out
// sorted as a registry would sort it, without sorting, hashing or checking
// tens of thousands of samples. Samples are carved out of slabs to keep
// the allocations per scrape few.
type builder struct {
	fams [numFamilies][]*dto.Metric

	metrics  []dto.Metric
	gauges   []dto.Gauge
	counters []dto.Counter
	values   []float64
	labels   []*dto.LabelPair
}

// Indexes of builder.fams.
const (
	famUp = iota
	famLimit
	famInUse
	famActive
	famInfo
	famDuration
	famErrors
	famRateLimited
	famConvMax
	famConvInfo
	famConvRefresh
	famConvSessions
	numFamilies
)

var familyAt = [numFamilies]*family{
	famUp: upFamily, famLimit: limitFamily, famInUse: inUseFamily, famActive: activeSessionsFamily,
	famInfo: appInfoFamily, famDuration: scrapeDurationFamily, famErrors: scrapeErrorsFamily,
	famRateLimited: rateLimitedUntilFamily, famConvMax: conversationMaxFamily, famConvInfo: conversationInfoFamily,
	famConvRefresh: conversationRefreshFamily, famConvSessions: conversationSessionsFamily,
}

// familyOrder lists the indexes of builder.fams in name order.
var familyOrder = func() []int {
	order := make([]int, numFamilies)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return familyAt[order[i]].name < familyAt[order[j]].name })
	return order
}()

const slab = 256

func newBuilder(apps int) *builder {
	b := &builder{}
	for _, i := range []int{famUp, famInfo, famDuration, famLimit, famInUse, famActive} {
		b.fams[i] = make([]*dto.Metric, 0, apps)
	}
	return b
}

func (b *builder) sample(fam int, labels ...*dto.LabelPair) *dto.Metric {
	m := take(&b.metrics)
	if len(b.labels) < len(labels) {
		b.labels = make([]*dto.LabelPair, max(slab, len(labels)))
	}
	m.Label = b.labels[:len(labels):len(labels)]
	b.labels = b.labels[len(labels):]
	copy(m.Label, labels)
	b.fams[fam] = append(b.fams[fam], m)
	return m
}

func (b *builder) value(v float64) *float64 {
	p := take(&b.values)
	*p = v
	return p
}

func (b *builder) gauge(fam int, v float64, labels ...*dto.LabelPair) {
	g := take(&b.gauges)
	g.Value = b.value(v)
	b.sample(fam, labels...).Gauge = g
}

func (b *builder) counter(fam int, v float64, labels ...*dto.LabelPair) {
	c := take(&b.counters)
	c.Value = b.value(v)
	b.sample(fam, labels...).Counter = c
}

// take hands out the next element of a slab, allocating a new slab when
// the current one is used up.
func take[T any](s *[]T) *T {
	if len(*s) == 0 {
		*s = make([]T, slab)
	}
	p := &(*s)[0]
	*s = (*s)[1:]
	return p
}

// add appends an app's samples; apps must be added in name order.
func (b *builder) add(st *appState, r *result) {
	st.mu.Lock()
	defer st.mu.Unlock()
	app := st.appPair
	up := 0.0
	if r.up() {
		up = 1
	}
	b.gauge(famUp, up, app)
	b.gauge(famDuration, r.duration.Seconds(), app)
	b.gauge(famInfo, 1, app, st.appIDPair, st.corpPair)
	if r.concErr == nil && r.conc != nil {
		b.gauge(famLimit, float64(r.conc.TotalConcurrentNumber), app)
		b.gauge(famInUse, float64(r.conc.UserConcurrentNumber), app)
	}
	if r.sessErr == nil {
		b.gauge(famActive, float64(r.sessions), app)
	}
	for _, ec := range st.errs {
		b.counter(famErrors, float64(ec.n), app, ec.endpoint, ec.reason)
	}
	if st.c != nil {
		if until := st.c.RetryAfter(); !until.IsZero() {
			b.gauge(famRateLimited, float64(until.UnixNano())/1e9, app)
		}
	}

	for _, cv := range st.conversations { // sorted by ID
		if !cv.known {
			continue
		}
		b.gauge(famConvMax, float64(cv.maxConv), app, cv.idPair)
		b.gauge(famConvInfo, 1, app, cv.idPair, cv.info[0], cv.info[1], cv.info[2], cv.info[3])
		b.gauge(famConvRefresh, float64(cv.refreshed.UnixNano())/1e9, app, cv.idPair)
	}
	if r.sessErr != nil {
		return
	}
	// Sessions per conversation: the configured conversations (0 when
	// none) and any other conversation named by a session, in ID order.
	var others []string
	for id := range r.perConv {
		if st.conversation(id) == nil {
			others = append(others, id)
		}
	}
	sort.Strings(others)
	convs, i := st.conversations, 0
	for _, cv := range convs {
		for ; i < len(others) && others[i] < cv.id; i++ {
			b.gauge(famConvSessions, float64(r.perConv[others[i]]), app, labelPair(&labelConversationID, others[i]))
		}
		b.gauge(famConvSessions, float64(r.perConv[cv.id]), app, cv.idPair)
	}
	for ; i < len(others); i++ {
		b.gauge(famConvSessions, float64(r.perConv[others[i]]), app, labelPair(&labelConversationID, others[i]))
	}
}

// families returns the non-empty families in name order.
func (b *builder) families() []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, numFamilies)
	for _, i := range familyOrder {
		if len(b.fams[i]) == 0 {
			continue
		}
		f := familyAt[i]
		out = append(out, &dto.MetricFamily{Name: &f.name, Help: &f.help, Type: &f.typ, Metric: b.fams[i]})
	}
	return out
}

// labelPair returns a label pair; the value is made valid UTF-8 as the
// exposition formats require.
func labelPair(name *string, value string) *dto.LabelPair {
	if !utf8.ValidString(value) {
		value = strings.ToValidUTF8(value, string(utf8.RuneError))
	}
	return &dto.LabelPair{Name: name, Value: &value}
}

// Label pairs of the error series, shared by every app.
var (
	endpointPairs = map[string]*dto.LabelPair{}
	reasonPairs   = map[string]*dto.LabelPair{}
)

func init() {
	for _, ep := range client.Endpoints {
		endpointPairs[ep] = labelPair(&labelEndpoint, ep)
	}
	for _, r := range client.Reasons {
		reasonPairs[r] = labelPair(&labelReason, r)
	}
}

func endpointPair(ep string) *dto.LabelPair {
	if p := endpointPairs[ep]; p != nil {
		return p
	}
	return labelPair(&labelEndpoint, ep)
}

func reasonPair(r string) *dto.LabelPair {
	if p := reasonPairs[r]; p != nil {
		return p
	}
	return labelPair(&labelReason, r)
}
