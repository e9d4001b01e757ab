// Package e2e holds the end-to-end test of the operations bundle against a
// real Prometheus: the exporter binary scrapes an in-process simulator of
// the platform, and Prometheus (3.x, built into .tools/ by `make
// test-deps`) scrapes the exporter with the shipped scrape configuration
// and rules; pint lints the rules against it. The test is built with the
// e2e tag: run it with `make e2e-test`.
package e2e
