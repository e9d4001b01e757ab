package client

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseSessionSlowly is parseSession by reflection, as it was before
// scanRecord: the reference scanRecord must agree with.
func parseSessionSlowly(t *testing.T, raw string) Session {
	t.Helper()
	var rec sessionRecord
	require.NoError(t, json.Unmarshal([]byte(raw), &rec))
	var s Session
	for _, v := range []json.RawMessage{rec.UUID, rec.SessionID, rec.ID} {
		if id := scalarString(v); id != "" {
			s.ID = id
			break
		}
	}
	s.ConversationID = scalarString(rec.ConversationID)
	if ms, err := strconv.ParseInt(scalarString(rec.StartTime), 10, 64); err == nil && ms > 0 {
		tm := time.UnixMilli(ms)
		s.Start = &tm
	}
	return s
}

func TestSessionRecordsReadWithoutReflectionMeanTheSame(t *testing.T) {
	for _, raw := range []string{
		`{}`,
		`{ }`,
		`{"uuid":"u-1","sessionId":"s-1","conversationId":"108","appId":"a","startTime":1700000000000,"status":"in_call"}`,
		`{"UUID":"upper","ConversationID":"c","STARTTIME":"1700000000001"}`,
		`{"uuid":"first","uuid":"second"}`,
		`{"uuid":"","sessionId":null,"id":42}`,
		`{"id":-7,"startTime":-5}`,
		`{"id":"x","startTime":1.7e12}`,
		`{"id":"x","startTime":"+17"}`,
		`{"id":"x","startTime":"0017"}`,
		`{"id":"x","startTime":" 17"}`,
		`{"id":"x","startTime":true}`,
		`{"id":"x","startTime":{"ms":1}}`,
		`{"u\u0075id":"escaped key","conversation\u0049d":"c9"}`,
		`{"ſessionId":"long s folds onto s"}`,
		`{"uuid":"with \"quotes\" and \\ and \u00e9 and \n"}`,
		`{"uuid":"caf\u00e9","conversationId":"\u4e2d\u6587"}`,
		"{\"uuid\":\"caf\xc3\xa9 raw\"}",
		`{"nested":{"uuid":"not me","list":[1,{"x":"}]"},"]"]},"uuid":"me"}`,
		`{ "uuid" : "spaced" , "startTime" : 1700000000002 }`,
		"{\n\t\"uuid\":\t\"tabs\",\r\n\"id\":1}",
		`{"conversationId":108,"uuid":["arr"],"sessionId":"s"}`,
		`{"conversationId":"","id":"only id"}`,
		`{"startTime":"1700000000003\u0030"}`,
	} {
		t.Run(raw, func(t *testing.T) {
			got, err := parseSession(json.RawMessage(raw))
			require.NoError(t, err)
			assert.Equal(t, parseSessionSlowly(t, raw), got)
			var rec sessionRecord
			assert.True(t, scanRecord([]byte(raw), &rec), "read without the fallback")
		})
	}
}

func TestSessionRecordScannerFallsBackOnUnexpectedInput(t *testing.T) {
	for _, raw := range []string{`{"uuid"}`, `{"uuid":}`, `{"uuid":"x"`, `{"uuid":"x",}`, `{"uuid":"x" "id":1}`, `{uuid:1}`, `{"a":[1,2}`} {
		var rec sessionRecord
		assert.False(t, scanRecord([]byte(raw), &rec), raw)
	}
}
