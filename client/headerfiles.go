package client

import (
	"strings"
	"sync"
)

// headerFiles are the secrets the transport reads from its SecretFiles.
// prometheus/common reads such a file at every request, so each one is
// looked at (a stat) at every call too, and read again when it changed: a
// new value is known from the first request that sends it. A file that
// cannot be read keeps its last value; the request fails anyway.
type headerFiles struct {
	once    sync.Once
	files   []*secretFile
	mu      sync.Mutex
	values  [][]string // per file: its secrets (see headerSecrets)
	version uint64     // changes when a value does
}

// fileSecrets returns the secrets in the transport's SecretFiles, and a
// number that changes when they do. Without files it costs nothing.
func (t *Transport) fileSecrets() ([]string, uint64) {
	if len(t.SecretFiles) == 0 {
		return nil, 0
	}
	h := &t.files
	h.once.Do(func() {
		for _, path := range t.SecretFiles {
			f := newSecretFile(path, "header", nil)
			f.recheck = 0
			h.files = append(h.files, &f)
		}
		h.values = make([][]string, len(h.files))
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	var all []string
	for i := range h.files {
		if b, changed, err := h.files[i].read(); err == nil && changed {
			h.values[i] = headerSecrets(strings.TrimSpace(string(b)))
			h.version++
		}
		all = append(all, h.values[i]...)
	}
	return all, h.version
}
