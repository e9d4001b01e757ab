package client_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
)

func decodeList(t *testing.T, data string) ([]client.Session, error) {
	t.Helper()
	var got []client.Session
	err := client.DecodeSessionList(json.NewDecoder(strings.NewReader(data)), client.SessionOptions{}, func(s client.Session) error {
		got = append(got, s)
		return nil
	})
	return got, err
}

func TestDecodeSessionListRecords(t *testing.T) {
	start := time.UnixMilli(1700000000000)
	at := func(ms int64) *time.Time { t := time.UnixMilli(ms); return &t }
	for _, tc := range []struct {
		record string
		want   client.Session
	}{
		{`{}`, client.Session{}},
		{`{"uuid":"u-1","sessionId":"s-1","conversationId":"108","appId":"a","startTime":1700000000000,"status":"in_call"}`,
			client.Session{ID: "u-1", ConversationID: "108", Start: &start}},
		{`{"UUID":"upper","ConversationID":"c","STARTTIME":"1700000000001"}`, client.Session{ID: "upper", ConversationID: "c", Start: at(1700000000001)}},
		{`{"uuid":"first","uuid":"second"}`, client.Session{ID: "second"}},
		{`{"uuid":"","sessionId":null,"id":42}`, client.Session{ID: "42"}},
		{`{"sessionId":"s-only","id":"later"}`, client.Session{ID: "s-only"}},
		{`{"id":-7,"startTime":-5}`, client.Session{ID: "-7"}},
		{`{"id":"x","startTime":1.7e12}`, client.Session{ID: "x"}},
		{`{"id":"seconds","startTime":1700000000}`, client.Session{ID: "seconds"}}, // 1970 as milliseconds: no start
		{`{"id":"1999","startTime":946684799999}`, client.Session{ID: "1999"}},
		{`{"id":"2000","startTime":946684800000}`, client.Session{ID: "2000", Start: at(946684800000)}},
		{`{"id":"x","startTime":true}`, client.Session{ID: "x"}},
		{`{"id":"x","startTime":{"ms":1}}`, client.Session{ID: "x"}},
		{`{"u\u0075id":"escaped key","conversation\u0049d":"c9"}`, client.Session{ID: "escaped key", ConversationID: "c9"}},
		{`{"ſessionId":"long s folds onto s"}`, client.Session{ID: "long s folds onto s"}},
		{`{"uuid":"caf\u00e9","conversationId":"\u4e2d\u6587"}`, client.Session{ID: "café", ConversationID: "中文"}},
		{`{"nested":{"uuid":"not me","list":[1,{"x":"}]"},"]"]},"uuid":"me"}`, client.Session{ID: "me"}},
		{`{"conversationId":108,"uuid":["arr"],"sessionId":"s"}`, client.Session{ID: "s", ConversationID: "108"}},
		{`"bare-id"`, client.Session{ID: "bare-id"}},
	} {
		t.Run(tc.record, func(t *testing.T) {
			got, err := decodeList(t, "["+tc.record+"]")
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, tc.want, got[0])
		})
	}
}

func TestDecodeSessionListShapes(t *testing.T) {
	for data, want := range map[string]int{
		`null`:               0,
		`[]`:                 0,
		`[{"uuid":"a"},"b"]`: 2,
		`{"total":2,"list":[{"uuid":"a"},{"uuid":"b"}]}`:                               2,
		`{"page":{"n":1},"records":[{"uuid":"a"}],"rows":[{"uuid":"x"},{"uuid":"y"}]}`: 1,
		`{"total":0}`: 0,
	} {
		got, err := decodeList(t, data)
		require.NoError(t, err, data)
		assert.Len(t, got, want, data)
	}
	for _, data := range []string{`"x"`, `12`, `true`, `[1]`, `[null]`, `[["a"]]`, `[{"uuid":"a"}`, `{"list":[{"uuid":}]}`} {
		_, err := decodeList(t, data)
		assert.Error(t, err, data)
	}
}

func TestDecodeSessionListKeepsRawOnlyWhenAsked(t *testing.T) {
	const rec = `{"uuid":"a", "extra":[1,2,{"deep":true}]}`
	var kept, dropped client.Session
	require.NoError(t, client.DecodeSessionList(json.NewDecoder(strings.NewReader("["+rec+"]")), client.SessionOptions{KeepRaw: true},
		func(s client.Session) error { kept = s; return nil }))
	require.NoError(t, client.DecodeSessionList(json.NewDecoder(strings.NewReader("["+rec+"]")), client.SessionOptions{},
		func(s client.Session) error { dropped = s; return nil }))
	assert.Equal(t, rec, string(kept.Raw))
	assert.Nil(t, dropped.Raw)
	assert.Equal(t, "a", dropped.ID)
}
