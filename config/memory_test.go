package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckMemory(t *testing.T) {
	const mib = int64(1 << 20)
	for _, tc := range []struct {
		name         string
		apps, conc   int
		bytes, limit int64
		fits         bool
	}{
		{"defaults in the shipped 115 MiB", 1000, DefaultMaxConcurrency, DefaultMaxResponseBytes, 115 * mib, true},
		{"no limit", 5000, 4096, 1 << 30, 0, true},
		{"the old defaults", 1, 32, 16 * mib, 115 * mib, false},
		{"just fits", 0, 1, mib, BaselineMemory + DecodeFactor*mib + HeaderMemory, true},
		{"one byte short", 0, 1, mib, BaselineMemory + DecodeFactor*mib + HeaderMemory - 1, false},
		{"thousands of tiny answers, each with its headers", 0, 4096, MinMaxResponseBytes, 2 << 30, false},
		{"many apps", 6000, DefaultMaxConcurrency, DefaultMaxResponseBytes, 115 * mib, false},
	} {
		c := &Config{API: DefaultAPI, Apps: make([]App, tc.apps)}
		c.API.MaxConcurrency, c.API.MaxResponseBytes = tc.conc, tc.bytes
		err := c.CheckMemory(tc.limit)
		assert.Equal(t, tc.fits, err == nil, "%s: %v", tc.name, err)
	}
}
