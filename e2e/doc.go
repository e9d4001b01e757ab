// Package e2e holds the end-to-end test of the operations bundle against a
// real Prometheus: the exporter binary scrapes an in-process simulator of
// the platform, and Prometheus (Debian's prometheus package) scrapes the
// exporter with the shipped scrape configuration and rules. The test is
// built with the e2e tag: run it with `make e2e-test`.
package e2e
