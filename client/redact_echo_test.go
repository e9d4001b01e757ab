package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/simulator"
)

// A platform that puts the token it received into its answers, in an
// escape encoding/json does not write or in an answer too long to be read
// whole, has it redacted all the same: in the strings the client returns,
// the raw JSON members it keeps and the message and data of a stop.
func TestTokensEchoedInOtherEscapesOrLongAnswersAreRedacted(t *testing.T) {
	for _, variant := range []string{"escaped", "long", "escaped and long"} {
		t.Run(variant, func(t *testing.T) {
			var sent []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				sent = append(sent, tok)
				echo, pad := tok, ""
				if strings.Contains(variant, "escaped") {
					echo = simulator.EscapeParts(tok)
				}
				if strings.Contains(variant, "long") {
					pad = strings.Repeat(" ", 70<<10)
				}
				var data string
				switch {
				case strings.HasSuffix(r.URL.Path, client.EndpointConcurrency):
					data = `{"cropId":"corp ` + echo + `","totalConcurrentNumber":5,"userConcurrentNumber":1}`
				case strings.HasSuffix(r.URL.Path, client.EndpointConversation):
					data = `{"id":"c1","conversationName":"conv ` + echo + `","maxConversation":2,` +
						`"conversationInfoDto":{"name":"` + echo + `"},"thirdDto":{"k":"` + echo + `"}}`
				case strings.HasSuffix(r.URL.Path, client.EndpointSessions):
					data = `[{"uuid":"` + echo + `","conversationId":"c1","startTime":1700000000000,"note":"` + echo + `"}]`
				case strings.HasSuffix(r.URL.Path, client.EndpointStopAll):
					data = `{"closed":"` + echo + `"}`
				default:
					http.NotFound(w, r)
					return
				}
				_, _ = fmt.Fprintf(w, `{%s"code":"0","message":"done %s","success":true,"data":%s}`, pad, echo, data)
			}))
			t.Cleanup(srv.Close)
			base, err := url.Parse(srv.URL + simulator.BasePath)
			require.NoError(t, err)
			tr := &client.Transport{HTTP: srv.Client(), BaseURL: base, Timeout: time.Minute, MaxResponseBytes: 1 << 20}
			c := client.New(tr, appID, client.NewJWTSource(appID, client.StaticKey(appKey), 0, nil))

			conc, err := c.Concurrency(context.Background())
			require.NoError(t, err)
			conv, err := c.Conversation(context.Background(), "c1")
			require.NoError(t, err)
			sessions, err := c.Sessions(context.Background()) // the raw records are kept: streamed
			require.NoError(t, err)
			require.Len(t, sessions, 1)
			stopped, err := c.StopAllSessions(context.Background())
			require.NoError(t, err)
			var third, record map[string]any
			require.NoError(t, json.Unmarshal(conv.ThirdDto, &third))
			require.NoError(t, json.Unmarshal(sessions[0].Raw, &record))

			require.NotEmpty(t, sent)
			tok := sent[0]
			secrets := []string{tok, tok[strings.LastIndex(tok, ".")+1:]} // and the signature alone
			for _, got := range []string{
				conc.CropID, conv.ConversationName, conv.ConversationInfoDto.Name,
				string(conv.ThirdDto), fmt.Sprint(third),
				sessions[0].ID, string(sessions[0].Raw), fmt.Sprint(record),
				stopped.Message, string(stopped.Data),
			} {
				for _, secret := range secrets {
					assert.NotContains(t, got, secret)
				}
				assert.Contains(t, got, "<redacted>")
			}
			assert.Equal(t, int64(5), conc.TotalConcurrentNumber, "the rest is decoded as it came")
			assert.Equal(t, "c1", sessions[0].ConversationID)
		})
	}
}
