package collector

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A pick is let go of only once its worker has set it: before that, the
// worker may still write to it.
func TestAPickIsDroppedOnlyOnceReady(t *testing.T) {
	f := &flight{done: make(chan struct{})}
	p := pick{ready: make(chan struct{}), f: f}
	p.drop()
	assert.Same(t, f, p.f, "not ready: kept")
	assert.NotNil(t, p.ready)

	close(p.ready)
	p.drop()
	assert.Equal(t, pick{}, p, "ready: its flight and channel let go of")
}
