package collector

import (
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWholeNumbersShareTheirValues checks that samples with the same whole
// number below sharedValues are written with one value, and that every
// other value is a value of its own, equal to the sample's.
func TestWholeNumbersShareTheirValues(t *testing.T) {
	write := func(counter bool, v float64) *dto.Metric {
		var m dto.Metric
		require.NoError(t, (&sample{upDesc, nil, counter, v}).Write(&m))
		return &m
	}
	for _, v := range []float64{0, 1, 2, 64, sharedValues - 1} {
		g1, g2 := write(false, v), write(false, v)
		require.NotNil(t, g1.Gauge)
		assert.Nil(t, g1.Counter)
		assert.Same(t, g1.Gauge, g2.Gauge, "gauge %g", v)
		assert.Equal(t, v, g1.GetGauge().GetValue())

		c1, c2 := write(true, v), write(true, v)
		require.NotNil(t, c1.Counter)
		assert.Nil(t, c1.Gauge)
		assert.Same(t, c1.Counter, c2.Counter, "counter %g", v)
		assert.Equal(t, v, c1.GetCounter().GetValue())
	}
	assert.NotSame(t, write(false, 1).Gauge, write(false, 2).Gauge)

	for _, v := range []float64{sharedValues, 0.5, 1.25, -1, math.Copysign(0, -1) - 0.5, 1e300, math.Inf(1), math.Inf(-1), 1700000000.123} {
		g1, g2 := write(false, v), write(false, v)
		assert.NotSame(t, g1.Gauge, g2.Gauge, "gauge %g", v)
		assert.Equal(t, v, g1.GetGauge().GetValue())
		c1, c2 := write(true, v), write(true, v)
		assert.NotSame(t, c1.Counter, c2.Counter, "counter %g", v)
		assert.Equal(t, v, c1.GetCounter().GetValue())
	}
	nan := write(false, math.NaN())
	assert.True(t, math.IsNaN(nan.GetGauge().GetValue()))
	assert.NotSame(t, nan.Gauge, write(false, math.NaN()).Gauge)

	// What was handed out is unchanged.
	for i := range sharedValues {
		require.Equal(t, float64(i), sharedGauges[i].g.GetValue())
		require.Equal(t, float64(i), sharedCounters[i].c.GetValue())
	}
}
