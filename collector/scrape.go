package collector

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// scrape is the collector of one scrape.
type scrape struct {
	e     *Exporter
	ctx   context.Context
	names []string
}

// Describe implements prometheus.Collector.
func (s *scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range allFamilies {
		ch <- f.desc
	}
}

// Collect implements prometheus.Collector: it fetches every app at once and
// reports each app's outcome on its own, so that one failing app never
// fails the scrape or touches another app's series.
func (s *scrape) Collect(ch chan<- prometheus.Metric) {
	for _, mf := range s.e.gather(s.ctx, s.names) {
		desc := familyByName[mf.GetName()].desc
		for _, m := range mf.Metric {
			ch <- builtMetric{desc: desc, m: m}
		}
	}
}

var familyByName = func() map[string]*family {
	m := make(map[string]*family, len(allFamilies))
	for _, f := range allFamilies {
		m[f.name] = f
	}
	return m
}()

// builtMetric is a sample built by the builder, as a prometheus.Metric.
type builtMetric struct {
	desc *prometheus.Desc
	m    *dto.Metric
}

func (b builtMetric) Desc() *prometheus.Desc { return b.desc }

func (b builtMetric) Write(out *dto.Metric) error {
	out.Label, out.Gauge, out.Counter = b.m.Label, b.m.Gauge, b.m.Counter
	return nil
}
