package simulator

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewFleet(t *testing.T) {
	sim, apps, err := NewFleet(Fleet{Apps: 3, Sessions: 4, Conversations: 2})
	require.NoError(t, err)
	require.Len(t, apps, 3)
	ids := map[string]bool{}
	for i, a := range apps {
		assert.Equal(t, FleetApp(i, 2), a, "derived from the index alone")
		ids[a.AppID] = true
		assert.Len(t, sim.Sessions(a.AppID), 4)
		for _, s := range sim.Sessions(a.AppID) {
			assert.Contains(t, a.Conversations, s.ConversationID)
		}
		for _, c := range a.Conversations {
			assert.NotNil(t, sim.app(a.AppID).conversation(c))
		}
	}
	assert.Len(t, ids, 3, "distinct app IDs")
	assert.Equal(t, "app-00001", apps[1].Name)
	assert.NotEqual(t, apps[0].AppKey, apps[1].AppKey)

	_, none, err := NewFleet(Fleet{Apps: 1})
	require.NoError(t, err)
	assert.Empty(t, none[0].Conversations)
}

func TestNewFleetRefusesOutOfRange(t *testing.T) {
	for _, f := range []Fleet{
		{},
		{Apps: MaxFleetApps + 1},
		{Apps: 1, Sessions: -1},
		{Apps: 1, Sessions: MaxFleetSessions + 1},
		{Apps: 1, Conversations: MaxFleetConversations + 1},
	} {
		_, _, err := NewFleet(f)
		assert.Error(t, err, "%+v", f)
	}
}

func TestListenWithMetricsCountsRequests(t *testing.T) {
	sim, apps, err := NewFleet(Fleet{Apps: 2, Sessions: 1})
	require.NoError(t, err)
	base, closeFn, err := sim.ListenWithMetrics("127.0.0.1:0")
	require.NoError(t, err)
	defer closeFn()

	get := func(url, token string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	tok, err := MintToken(apps[1].AppID, apps[1].AppKey, time.Now(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	for range 3 {
		code, body := get(base+"/"+EndpointConcurrency+"?appId="+apps[1].AppID, tok)
		require.Equal(t, http.StatusOK, code, body)
	}
	code, _ := get(base+"/"+EndpointSessions+"?appId="+apps[1].AppID, "")
	assert.Equal(t, http.StatusUnauthorized, code, "refused, and counted")

	metricsURL := strings.TrimSuffix(base, BasePath) + "/metrics"
	code, body := get(metricsURL, "")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `duix_simulator_requests_total{endpoint="getconcurrentNumber"} 3`+"\n")
	assert.Contains(t, body, `duix_simulator_requests_total{endpoint="getconcurrentList"} 1`+"\n")
	assert.Contains(t, body, `duix_simulator_requests_total{endpoint="getConversationById"} 0`+"\n")
	assert.Contains(t, body, `duix_simulator_requests_total{endpoint="distroyCallSessionsByAppId"} 0`+"\n")
	assert.Zero(t, sim.Requests("/metrics"), "scraping the simulator is not an API request")
}
