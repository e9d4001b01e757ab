package collector

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSharedPairsAreHeldOnceAndDroppedWithTheirLastHolder checks that the
// same name and value give one pair, that another name or value gives
// another, and that a pair nobody holds leaves the table (its cleanup runs
// after a collection, so the test collects until it has, however slowly).
func TestSharedPairsAreHeldOnceAndDroppedWithTheirLastHolder(t *testing.T) {
	const value = "shared-pair-test-zh"
	a, b := sharedPair(&labelLanguage, value), sharedPair(&labelLanguage, value)
	require.Same(t, a, b)
	assert.Equal(t, "language", a.GetName())
	assert.Equal(t, value, a.GetValue())
	assert.NotSame(t, a, sharedPair(&labelTTSName, value), "another label")
	assert.NotSame(t, a, sharedPair(&labelLanguage, value+"-2"), "another value")

	held := func(name *string, value string) bool {
		sharedPairs.mu.Lock()
		defer sharedPairs.mu.Unlock()
		_, ok := sharedPairs.m[pairKey{name, value}]
		return ok
	}
	require.True(t, held(&labelLanguage, value))
	runtime.KeepAlive(a)
	a, b = nil, nil
	for deadline := time.Now().Add(time.Minute); held(&labelLanguage, value) || held(&labelTTSName, value) || held(&labelLanguage, value+"-2"); {
		require.True(t, time.Now().Before(deadline), "pairs nobody holds are still in the table after a minute of collections")
		runtime.GC()
		time.Sleep(time.Millisecond) // cleanups run on a goroutine of their own
	}

	// Asked again, it is made anew.
	c := sharedPair(&labelLanguage, value)
	assert.Equal(t, value, c.GetValue())
	assert.True(t, held(&labelLanguage, value))
	runtime.KeepAlive(c)
}
