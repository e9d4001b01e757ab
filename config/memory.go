package config

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Memory sizing (docs/reliability.md#memory): a call holds at most max_response_bytes of answer and decoding it holds
// at most DecodeFactor times that (measured by package client's tests); the exporter's own state is BaselineMemory plus
// PerAppMemory per app, above what `make load` measures (about 35 MiB peak RSS at 1000 apps, 95 MiB at 5000).
const (
	DecodeFactor   = 7
	BaselineMemory = int64(24 << 20)
	PerAppMemory   = int64(24 << 10)
	MaxHeaderBytes = 24 << 10  // of a call's headers (package client), which hold at most HeaderMemory once parsed
	HeaderMemory   = 576 << 10 // 24 times: net/http holds some 100 bytes for a header of 4 (measured: 21.5 at most)
)

// MemoryNeeded is the memory the exporter may need with c at worst.
func (c *Config) MemoryNeeded() int64 {
	return BaselineMemory + int64(len(c.Apps))*PerAppMemory + int64(c.API.MaxConcurrency)*(c.API.MaxResponseBytes*DecodeFactor+HeaderMemory)
}

// CheckMemory returns an error when c may need more than limit bytes (limit <= 0: no limit).
func (c *Config) CheckMemory(limit int64) error {
	if need := c.MemoryNeeded(); limit > 0 && need > limit {
		return fmt.Errorf("api.max_concurrency (%d) × (api.max_response_bytes (%d) × %d + %d KiB of headers), with %d app(s), may need %d MiB, over the memory limit of %d MiB: lower one of them or raise the limit",
			c.API.MaxConcurrency, c.API.MaxResponseBytes, DecodeFactor, HeaderMemory>>10, len(c.Apps), need>>20, limit>>20)
	}
	return nil
}

// MemoryLimit is the memory limit the process runs under and where it comes from: GOMEMLIMIT when set, else a numeric
// cgroup v2 memory.max, else 0 (none).
func MemoryLimit() (limit int64, source string) {
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		return l, "GOMEMLIMIT"
	}
	b, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if l, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && perr == nil && l > 0 {
		return l, "cgroup memory.max"
	}
	return 0, ""
}
