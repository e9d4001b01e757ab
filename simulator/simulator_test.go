package simulator

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const unauthorizedBody = `{"code":"401","message":"token invalid or expired","success":false,"data":null}`

func TestConcurrencyHappyPath(t *testing.T) {
	e := newEnv(t)
	_, err := e.sim.StartSession(appA, "c1")
	require.NoError(t, err)
	_, err = e.sim.StartSession(appA, "c1")
	require.NoError(t, err)

	r := e.get(EndpointConcurrency, "appId", appA)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.Equal(t,
		`{"code":"200","data":{"cropId":"corp-a","totalConcurrentNumber":3,"userConcurrentNumber":2},"message":"","success":true}`,
		string(r.body))
	assert.JSONEq(t,
		`{"code":"200","data":{"cropId":"corp-a","totalConcurrentNumber":3,"userConcurrentNumber":2},"message":"","success":true}`,
		string(r.body))

	// App B is independent.
	r = e.getAs(appB, keyB, EndpointConcurrency, "appId", appB)
	assert.JSONEq(t,
		`{"code":"200","data":{"cropId":"corp-b","totalConcurrentNumber":2,"userConcurrentNumber":0},"message":"","success":true}`,
		string(r.body))
}

func TestTokenHeaderStyles(t *testing.T) {
	e := newEnv(t)
	tok := e.token(appA, keyA)
	u := e.url(EndpointConcurrency, "appId", appA)

	for name, hdr := range map[string]map[string]string{
		"bearer":           {"Authorization": "Bearer " + tok},
		"bearer lowercase": {"Authorization": "bearer " + tok},
		"token header":     {"token": tok},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.do(http.MethodGet, u, hdr)
			assert.Equal(t, http.StatusOK, r.status)
			assert.Equal(t, true, decode(t, r.body)["success"])
		})
	}

	// When Authorization is present it is the one used, even if the token
	// header holds a valid token.
	r := e.do(http.MethodGet, u, map[string]string{"Authorization": "Bearer nope", "token": tok})
	assert.Equal(t, http.StatusUnauthorized, r.status)
}

func signed(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
	require.NoError(t, err)
	return tok
}

func TestAuthRefusals(t *testing.T) {
	e := newEnv(t)
	now := e.clock.Now()
	good := jwt.MapClaims{"appId": appA, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	without := func(k string) jwt.MapClaims {
		c := jwt.MapClaims{}
		for kk, v := range good {
			if kk != k {
				c[kk] = v
			}
		}
		return c
	}

	cases := map[string]map[string]string{
		"missing header":    nil,
		"empty bearer":      {"Authorization": "Bearer "},
		"not bearer scheme": {"Authorization": "Basic " + e.token(appA, keyA)},
		"malformed":         bearer("not.a.jwt"),
		"garbage":           bearer("garbage"),
		"alg none":          bearer(signed(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, good)),
		"alg HS384":         bearer(signed(t, jwt.SigningMethodHS384, []byte(keyA), good)),
		"wrong key":         bearer(signed(t, jwt.SigningMethodHS256, []byte("wrong"), good)),
		"other app's key":   bearer(signed(t, jwt.SigningMethodHS256, []byte(keyB), good)),
		"unknown app": bearer(signed(t, jwt.SigningMethodHS256, []byte(keyA),
			jwt.MapClaims{"appId": "nobody", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})),
		"no exp":       bearer(signed(t, jwt.SigningMethodHS256, []byte(keyA), without("exp"))),
		"no iat":       bearer(signed(t, jwt.SigningMethodHS256, []byte(keyA), without("iat"))),
		"no appId":     bearer(signed(t, jwt.SigningMethodHS256, []byte(keyA), without("appId"))),
		"numeric app":  bearer(signed(t, jwt.SigningMethodHS256, []byte(keyA), jwt.MapClaims{"appId": 7, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})),
		"bad in token": {"token": "garbage"},
		"expired": bearer(signed(t, jwt.SigningMethodHS256, []byte(keyA),
			jwt.MapClaims{"appId": appA, "iat": now.Add(-time.Hour).Unix(), "exp": now.Add(-time.Second).Unix()})),
	}
	for name, hdr := range cases {
		t.Run(name, func(t *testing.T) {
			for _, ep := range []string{EndpointConcurrency, EndpointSessions, EndpointStop, EndpointStopAll, EndpointConversation} {
				r := e.do(http.MethodGet, e.url(ep, "appId", appA, "uuid", "x", "conversationId", "c"), hdr)
				assert.Equal(t, http.StatusUnauthorized, r.status, ep)
				assert.Equal(t, unauthorizedBody, string(r.body), ep)
				for _, v := range hdr {
					if tok := strings.TrimPrefix(v, "Bearer "); len(tok) > 3 {
						assert.NotContains(t, string(r.body), tok)
					}
				}
			}
		})
	}
}

func TestTokenExpiresPerSimulatorClock(t *testing.T) {
	e := newEnv(t)
	tok := e.token(appA, keyA) // valid 30 minutes from the fake now
	u := e.url(EndpointConcurrency, "appId", appA)

	assert.Equal(t, http.StatusOK, e.do(http.MethodGet, u, bearer(tok)).status)
	e.clock.Add(29 * time.Minute)
	assert.Equal(t, http.StatusOK, e.do(http.MethodGet, u, bearer(tok)).status)
	e.clock.Add(2 * time.Minute)
	r := e.do(http.MethodGet, u, bearer(tok))
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, unauthorizedBody, string(r.body))
}

func TestKeyRotationWithAddApp(t *testing.T) {
	e := newEnv(t)
	old := e.token(appA, keyA)
	_, err := e.sim.StartSession(appA, "c")
	require.NoError(t, err)
	e.sim.AddApp(App{ID: appA, Key: "new-key", CorpID: "corp-a2", Allowance: 7})

	u := e.url(EndpointConcurrency, "appId", appA)
	assert.Equal(t, http.StatusUnauthorized, e.do(http.MethodGet, u, bearer(old)).status)
	r := e.do(http.MethodGet, u, bearer(e.token(appA, "new-key")))
	assert.JSONEq(t,
		`{"code":"200","data":{"cropId":"corp-a2","totalConcurrentNumber":7,"userConcurrentNumber":1},"message":"","success":true}`,
		string(r.body))
}

func TestAppMismatchForbidden(t *testing.T) {
	e := newEnv(t)
	for _, ep := range []string{EndpointConcurrency, EndpointSessions, EndpointStopAll} {
		for _, target := range []string{appB, "unknown-app"} {
			r := e.get(ep, "appId", target)
			assert.Equal(t, http.StatusForbidden, r.status, ep)
			assert.Equal(t, `{"code":"403","message":"token not valid for this app","success":false,"data":null}`, string(r.body))
		}
	}
}

func TestMissingParameters(t *testing.T) {
	e := newEnv(t)
	for ep, param := range map[string]string{
		EndpointConcurrency:  "appId",
		EndpointSessions:     "appId",
		EndpointStop:         "uuid",
		EndpointStopAll:      "appId",
		EndpointConversation: "conversationId",
	} {
		r := e.get(ep)
		assert.Equal(t, http.StatusOK, r.status, ep)
		assert.Equal(t, `{"code":"400","message":"`+param+` is required","success":false,"data":null}`, string(r.body), ep)
		r = e.get(ep, param, "")
		assert.Equal(t, `{"code":"400","message":"`+param+` is required","success":false,"data":null}`, string(r.body), ep)
	}
}

func TestMethodAndPath(t *testing.T) {
	e := newEnv(t)
	tok := bearer(e.token(appA, keyA))
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		r := e.do(m, e.url(EndpointConcurrency, "appId", appA), tok)
		assert.Equal(t, http.StatusMethodNotAllowed, r.status)
		assert.Equal(t, http.MethodGet, r.header.Get("Allow"))
		assert.Equal(t, `{"code":"405","message":"method not allowed","success":false,"data":null}`, string(r.body))
	}
	for _, p := range []string{BasePath + "/nothing", BasePath, "/", "/other/getconcurrentNumber", BasePath + "/getconcurrentNumber/x"} {
		r := e.do(http.MethodGet, e.srv.URL+p, tok)
		assert.Equal(t, http.StatusNotFound, r.status, p)
		assert.Equal(t, `{"code":"404","message":"not found","success":false,"data":null}`, string(r.body), p)
	}
}

func TestSessionAccounting(t *testing.T) {
	e := newEnv(t)
	s := e.sim

	_, err := s.StartSession("nobody", "c")
	assert.ErrorIs(t, err, ErrUnknownApp)
	_, err = s.ForceSession("nobody", "c")
	assert.ErrorIs(t, err, ErrUnknownApp)
	assert.ErrorIs(t, s.SetAllowance("nobody", 1), ErrUnknownApp)
	assert.Zero(t, s.InUse("nobody"))
	assert.Nil(t, s.Sessions("nobody"))
	assert.False(t, s.EndSession("nobody", "x"))

	var ids []string
	for i := 0; i < 3; i++ {
		id, err := s.StartSession(appA, "c")
		require.NoError(t, err)
		assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, id)
		ids = append(ids, id)
	}
	_, err = s.StartSession(appA, "c")
	assert.ErrorIs(t, err, ErrAllowanceExhausted)
	assert.Equal(t, 3, s.InUse(appA))

	forced, err := s.ForceSession(appA, "c")
	require.NoError(t, err)
	assert.Equal(t, 4, s.InUse(appA))
	assert.Zero(t, s.InUse(appB))

	assert.True(t, s.EndSession(appA, ids[1]))
	assert.False(t, s.EndSession(appA, ids[1]))
	assert.False(t, s.EndSession(appB, ids[0]), "session of another app")
	assert.Equal(t, 3, s.InUse(appA))

	got := s.Sessions(appA)
	require.Len(t, got, 3)
	assert.Equal(t, []string{ids[0], ids[2], forced}, []string{got[0].ID, got[1].ID, got[2].ID})

	_, err = s.StartSession(appA, "c")
	assert.ErrorIs(t, err, ErrAllowanceExhausted, "in use 3 of 3")
	require.NoError(t, s.SetAllowance(appA, 5))
	_, err = s.StartSession(appA, "c")
	assert.NoError(t, err)

	r := e.get(EndpointConcurrency, "appId", appA)
	assert.JSONEq(t,
		`{"code":"200","data":{"cropId":"corp-a","totalConcurrentNumber":5,"userConcurrentNumber":4},"message":"","success":true}`,
		string(r.body))

	// Over the limit is reported as is.
	require.NoError(t, s.SetAllowance(appA, 1))
	r = e.get(EndpointConcurrency, "appId", appA)
	assert.JSONEq(t,
		`{"code":"200","data":{"cropId":"corp-a","totalConcurrentNumber":1,"userConcurrentNumber":4},"message":"","success":true}`,
		string(r.body))
}

func TestSessionsReturnsCopy(t *testing.T) {
	e := newEnv(t)
	id, err := e.sim.StartSession(appA, "c")
	require.NoError(t, err)
	got := e.sim.Sessions(appA)
	got[0].ID = "changed"
	assert.Equal(t, id, e.sim.Sessions(appA)[0].ID)
}

func TestSessionListAndShapes(t *testing.T) {
	e := newEnv(t)
	start := e.clock.Now()
	id1, _ := e.sim.StartSession(appA, "conv-1")
	e.clock.Add(time.Second)
	id2, _ := e.sim.StartSession(appA, "conv-2")
	e.clock.Add(time.Second)
	id3, _ := e.sim.StartSession(appA, "conv-1")
	require.True(t, e.sim.EndSession(appA, id2))
	_, _ = e.sim.StartSession(appB, "conv-b")

	rec := func(id, conv string, ms int64) string {
		b, _ := json.Marshal(map[string]any{"uuid": id, "sessionId": id, "conversationId": conv,
			"appId": appA, "startTime": ms, "status": "in_call"})
		return string(b)
	}
	list := "[" + rec(id1, "conv-1", start.UnixMilli()) + "," + rec(id3, "conv-1", start.Add(2*time.Second).UnixMilli()) + "]"

	// Default: bare array, exact bytes.
	r := e.get(EndpointSessions, "appId", appA)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.Equal(t,
		`{"code":"200","data":[`+
			`{"uuid":"`+id1+`","sessionId":"`+id1+`","conversationId":"conv-1","appId":"app-a","startTime":`+jsonInt(start.UnixMilli())+`,"status":"in_call"},`+
			`{"uuid":"`+id3+`","sessionId":"`+id3+`","conversationId":"conv-1","appId":"app-a","startTime":`+jsonInt(start.Add(2*time.Second).UnixMilli())+`,"status":"in_call"}`+
			`],"message":"","success":true}`,
		string(r.body))

	// Records that do not name their conversation.
	e.sim.SetSessionConversationIDs(false)
	r = e.get(EndpointSessions, "appId", appA)
	assert.NotContains(t, string(r.body), "conversationId")
	assert.Contains(t, string(r.body), `"uuid":"`+id1+`"`)
	e.sim.SetSessionConversationIDs(true)

	for shape, data := range map[Shape]string{
		ShapeArray:   list,
		ShapeList:    `{"list":` + list + `,"total":2}`,
		ShapeRecords: `{"records":` + list + `,"total":2}`,
		ShapeRows:    `{"rows":` + list + `,"total":2}`,
		ShapeNull:    `null`,
	} {
		e.sim.SetSessionListShape(shape)
		r := e.get(EndpointSessions, "appId", appA)
		assert.JSONEq(t, `{"code":"200","data":`+data+`,"message":"","success":true}`, string(r.body), "shape %d", shape)
	}

	// Empty list.
	e.sim.SetSessionListShape(ShapeArray)
	r = e.getAs(appB, keyB, EndpointSessions, "appId", appB)
	assert.Len(t, decode(t, r.body)["data"], 1)
	require.True(t, e.sim.EndSession(appB, e.sim.Sessions(appB)[0].ID))
	r = e.getAs(appB, keyB, EndpointSessions, "appId", appB)
	assert.Equal(t, `{"code":"200","data":[],"message":"","success":true}`, string(r.body))
	e.sim.SetSessionListShape(ShapeRows)
	r = e.getAs(appB, keyB, EndpointSessions, "appId", appB)
	assert.Equal(t, `{"code":"200","data":{"rows":[],"total":0},"message":"","success":true}`, string(r.body))
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestSessionListEscapesIDs(t *testing.T) {
	e := newEnv(t)
	_, err := e.sim.StartSession(appA, `conv "quoted" <&> é`)
	require.NoError(t, err)
	r := e.get(EndpointSessions, "appId", appA)
	var env struct {
		Data []struct {
			ConversationID string `json:"conversationId"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.body, &env))
	require.Len(t, env.Data, 1)
	assert.Equal(t, `conv "quoted" <&> é`, env.Data[0].ConversationID)
}

func TestLargeSessionList(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.sim.SetAllowance(appA, 5000))
	for i := 0; i < 5000; i++ {
		_, err := e.sim.StartSession(appA, "c")
		require.NoError(t, err)
	}
	e.sim.SetSessionListShape(ShapeList)
	r := e.get(EndpointSessions, "appId", appA)
	var env struct {
		Data struct {
			List  []map[string]any `json:"list"`
			Total int              `json:"total"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.body, &env))
	assert.Len(t, env.Data.List, 5000)
	assert.Equal(t, 5000, env.Data.Total)

	// End most sessions (exercises compaction) and check the order stays.
	sessions := e.sim.Sessions(appA)
	for i, ss := range sessions {
		if i%10 != 0 {
			require.True(t, e.sim.EndSession(appA, ss.ID))
		}
	}
	left := e.sim.Sessions(appA)
	require.Len(t, left, 500)
	for i, ss := range left {
		assert.Equal(t, sessions[i*10].ID, ss.ID)
	}
	assert.Equal(t, 500, e.sim.InUse(appA))
}

func TestSessionStop(t *testing.T) {
	e := newEnv(t)
	id1, _ := e.sim.StartSession(appA, "c")
	id2, _ := e.sim.StartSession(appA, "c")
	idB, _ := e.sim.StartSession(appB, "c")

	r := e.get(EndpointStop, "uuid", id1)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, `{"code":"200","message":"","success":true,"data":true}`, string(r.body))
	assert.Equal(t, 1, e.sim.InUse(appA))
	assert.Equal(t, id2, e.sim.Sessions(appA)[0].ID)

	notFound := `{"code":"404","message":"session not found or not active","success":false,"data":null}`
	r = e.get(EndpointStop, "uuid", id1) // already ended
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, notFound, string(r.body))
	r = e.get(EndpointStop, "uuid", "no-such-session")
	assert.Equal(t, notFound, string(r.body))
	r = e.get(EndpointStop, "uuid", idB) // belongs to app B
	assert.Equal(t, notFound, string(r.body))
	assert.Equal(t, 1, e.sim.InUse(appB))

	r = e.get(EndpointConcurrency, "appId", appA)
	assert.Equal(t, float64(1), decode(t, r.body)["data"].(map[string]any)["userConcurrentNumber"])

	// The freed slot can be used again.
	_, err := e.sim.StartSession(appA, "c")
	require.NoError(t, err)
}

func TestStopAllSessions(t *testing.T) {
	e := newEnv(t)
	for range 3 {
		_, err := e.sim.StartSession(appA, "c")
		require.NoError(t, err)
	}
	idB, err := e.sim.StartSession(appB, "c")
	require.NoError(t, err)

	r := e.get(EndpointStopAll, "appId", appA)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, `{"code":"200","message":"","success":true,"data":{"count":3}}`, string(r.body))
	assert.Zero(t, e.sim.InUse(appA))
	assert.Empty(t, e.sim.Sessions(appA))
	r = e.get(EndpointSessions, "appId", appA)
	assert.JSONEq(t, `{"code":"200","data":[],"message":"","success":true}`, string(r.body))
	assert.Equal(t, []Session{{ID: idB, ConversationID: "c", Start: e.clock.Now()}}, e.sim.Sessions(appB), "another app's sessions are kept")

	r = e.get(EndpointStopAll, "appId", appA)
	assert.Equal(t, `{"code":"200","message":"","success":true,"data":{"count":0}}`, string(r.body), "nothing left to end")

	// The slots are free again, and the app works as before.
	for range 3 {
		_, err := e.sim.StartSession(appA, "c")
		require.NoError(t, err)
	}
	id := e.sim.Sessions(appA)[1].ID
	assert.Equal(t, `{"code":"200","message":"","success":true,"data":true}`, string(e.get(EndpointStop, "uuid", id).body))
	assert.Equal(t, 2, e.sim.InUse(appA))

	// Counted like the other endpoints.
	assert.EqualValues(t, 2, e.sim.Requests(EndpointStopAll))
	assert.EqualValues(t, 2, e.sim.RequestsFor(appA, EndpointStopAll))
}

func TestConversationDetails(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.sim.AddConversation(appA, NewConversation("108", "法律顾问", 2)))
	require.NoError(t, e.sim.AddConversation(appB, NewConversation("209", "other", 1)))

	r := e.get(EndpointConversation, "conversationId", "108")
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(string(r.body), `{"code":"0","message":"SUCCESS","msg":"SUCCESS","success":true,"data":{`), string(r.body))

	m := decode(t, r.body)
	assert.Equal(t, "0", m["code"])
	assert.Equal(t, "SUCCESS", m["message"])
	assert.Equal(t, "SUCCESS", m["msg"])
	assert.Equal(t, true, m["success"])
	d := m["data"].(map[string]any)

	// §2.2 fields, with JSON kinds.
	expect := func(obj map[string]any, fields map[string]string) {
		t.Helper()
		assert.Len(t, obj, len(fields), "no extra or missing fields")
		for f, kind := range fields {
			v, ok := obj[f]
			if !assert.True(t, ok, "field %s missing", f) {
				continue
			}
			assert.Equal(t, kind, kindOf(v), "field %s", f)
		}
	}
	expect(d, map[string]string{
		"id": "string", "conversationName": "string", "language": "string", "corpId": "string",
		"userId": "string", "conversationConfigDto": "null", "maxConversation": "number",
		"dataModelIsUsed": "number", "knowledgeIsUsed": "number", "fileIsUsed": "number",
		"thirdIsUsed": "number", "isFreedom": "number", "asrProvider": "string",
		"conversationInfoDto": "object", "detailDto": "object", "knowledgeDtoList": "array",
		"kbConversationDto": "null", "modelDtoList": "array", "thirdDto": "null", "scriptDtoList": "array",
	})
	assert.Equal(t, "108", d["id"])
	assert.Equal(t, "法律顾问", d["conversationName"])
	assert.Equal(t, "zh", d["language"])
	assert.Equal(t, "corp-a", d["corpId"], "filled from the app")
	assert.Equal(t, float64(2), d["maxConversation"])
	assert.Empty(t, d["knowledgeDtoList"])

	expect(d["conversationInfoDto"].(map[string]any), map[string]string{
		"id": "number", "name": "string", "nickName": "string", "gender": "number", "age": "number",
		"height": "number", "weight": "number", "characters": "string", "backStory": "string",
	})
	detail := d["detailDto"].(map[string]any)
	expect(detail, map[string]string{
		"id": "number", "conversationId": "string", "proportion": "string", "terminalType": "number",
		"modelId": "string", "modelIdType": "number", "imageId": "null", "sceneId": "null",
		"modelName": "string", "sceneType": "number", "background": "number", "backgroundDto": "object",
		"modelConfig": "null", "ttsId": "string", "ttsName": "string", "ttsConfig": "null",
		"ttsUrl": "string", "ttsVolume": "number", "ttsSpeaker": "string", "ttsSpeedRate": "number",
		"ttsPitch": "number", "ttsSource": "number", "samplePictureUrl": "string", "videoWidth": "number",
		"videoHeight": "number", "humanProportion": "string", "humanWidth": "number", "humanHeight": "number",
		"humanX": "number", "humanY": "number", "localModelInfo": "null",
	})
	assert.Equal(t, "guina", detail["ttsName"])
	assert.Equal(t, "108", detail["conversationId"])
	assert.NotEmpty(t, detail["modelName"])
	expect(detail["backgroundDto"].(map[string]any), map[string]string{
		"id": "number", "backgroundCode": "string", "backgroundName": "string", "backgroundUrl": "string",
		"fileType": "number", "proportion": "string", "userId": "null",
	})

	models := d["modelDtoList"].([]any)
	require.NotEmpty(t, models)
	m0 := models[0].(map[string]any)
	expect(m0, map[string]string{
		"id": "number", "conversationId": "string", "largeModelType": "number", "modelCode": "number",
		"largeName": "string", "modelId": "string", "prompt": "string", "botUrl": "string",
	})
	assert.Equal(t, "chatbot_law", m0["largeName"])

	scripts := d["scriptDtoList"].([]any)
	types := map[float64]bool{}
	for _, s := range scripts {
		sm := s.(map[string]any)
		assert.Len(t, sm, 6)
		for _, f := range []string{"id", "scriptType"} {
			assert.Equal(t, "number", kindOf(sm[f]))
		}
		for _, f := range []string{"conversationId", "scriptContent", "emotion"} {
			assert.Equal(t, "string", kindOf(sm[f]))
		}
		assert.Contains(t, []string{"string", "null"}, kindOf(sm["ttsContent"]))
		assert.NotEmpty(t, sm["scriptContent"])
		types[sm["scriptType"].(float64)] = true
	}
	assert.Equal(t, float64(0), scripts[0].(map[string]any)["scriptType"])
	for typ := 0; typ <= 7; typ++ {
		assert.True(t, types[float64(typ)], "script type %d", typ)
	}

	// Unknown, or another app's conversation.
	notFound := `{"code":"404","message":"conversation not found","msg":"conversation not found","success":false,"data":null}`
	for _, id := range []string{"999", "209"} {
		r = e.get(EndpointConversation, "conversationId", id)
		assert.Equal(t, http.StatusOK, r.status)
		assert.Equal(t, notFound, string(r.body))
	}
	r = e.getAs(appB, keyB, EndpointConversation, "conversationId", "209")
	assert.Equal(t, "209", decode(t, r.body)["data"].(map[string]any)["id"])
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

func TestAddConversation(t *testing.T) {
	e := newEnv(t)
	assert.ErrorIs(t, e.sim.AddConversation("nobody", NewConversation("1", "x", 1)), ErrUnknownApp)
	assert.ErrorIs(t, e.sim.AddConversation(appA, Conversation{}), ErrInvalidConversation)

	// A bare record has empty arrays where it sets none, and a given corp ID is kept.
	require.NoError(t, e.sim.AddConversation(appA, Conversation{ID: "bare", CorpID: "mine"}))
	d := decode(t, e.get(EndpointConversation, "conversationId", "bare").body)["data"].(map[string]any)
	assert.Equal(t, "mine", d["corpId"])
	for _, f := range []string{"knowledgeDtoList", "scriptDtoList"} {
		assert.Equal(t, []any{}, d[f], f)
	}

	// Replacing; later changes to the caller's value have no effect.
	c := NewConversation("bare", "renamed", 4)
	require.NoError(t, e.sim.AddConversation(appA, c))
	c.ConversationName = "mutated"
	c.ScriptDtoList[0].ScriptContent = "mutated"
	d = decode(t, e.get(EndpointConversation, "conversationId", "bare").body)["data"].(map[string]any)
	assert.Equal(t, "renamed", d["conversationName"])
	assert.NotEqual(t, "mutated", d["scriptDtoList"].([]any)[0].(map[string]any)["scriptContent"])
}

func TestNewConversationDeterministic(t *testing.T) {
	a, b := NewConversation("abc", "n", 3).record(), NewConversation("abc", "n", 3).record()
	assert.Equal(t, string(a), string(b))
	c := NewConversation("108", "n", 3)
	assert.Equal(t, 3, c.MaxConversation)
	var d struct {
		Persona struct{ ID int64 } `json:"conversationInfoDto"`
		Detail  struct {
			ID         int64
			Background struct{ ID int64 } `json:"backgroundDto"`
		} `json:"detailDto"`
		Models  []struct{ ID int64 } `json:"modelDtoList"`
		Scripts []struct{ ID int64 } `json:"scriptDtoList"`
	}
	require.NoError(t, json.Unmarshal(c.record(), &d))
	ids := map[int64]bool{d.Persona.ID: true, d.Detail.ID: true, d.Detail.Background.ID: true, d.Models[0].ID: true}
	for _, s := range d.Scripts {
		ids[s.ID] = true
	}
	assert.Len(t, ids, 4+len(c.ScriptDtoList), "distinct nested IDs")
}

func TestMintToken(t *testing.T) {
	iat := time.Unix(1700000000, 0)
	tok, err := MintToken("app", "key", iat, iat.Add(1800*time.Second))
	require.NoError(t, err)
	claims := jwt.MapClaims{}
	parsed, err := jwt.NewParser(jwt.WithoutClaimsValidation()).ParseWithClaims(tok, claims,
		func(*jwt.Token) (any, error) { return []byte("key"), nil })
	require.NoError(t, err)
	assert.Equal(t, "HS256", parsed.Method.Alg())
	assert.Equal(t, "app", claims["appId"])
	assert.Equal(t, float64(1700000000), claims["iat"])
	assert.Equal(t, float64(1700001800), claims["exp"])
}

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

	e := &env{t: t} // for its requests only: the simulator is on base
	tok, err := MintToken(apps[1].AppID, apps[1].AppKey, time.Now(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	for range 3 {
		r := e.do(http.MethodGet, base+"/"+EndpointConcurrency+"?appId="+apps[1].AppID, bearer(tok))
		require.Equal(t, http.StatusOK, r.status, string(r.body))
	}
	r := e.do(http.MethodGet, base+"/"+EndpointSessions+"?appId="+apps[1].AppID, nil)
	assert.Equal(t, http.StatusUnauthorized, r.status, "refused, and counted")

	r = e.do(http.MethodGet, strings.TrimSuffix(base, BasePath)+"/metrics", nil)
	require.Equal(t, http.StatusOK, r.status)
	body := string(r.body)
	assert.Contains(t, body, `duix_simulator_requests_total{endpoint="getconcurrentNumber"} 3`+"\n")
	assert.Contains(t, body, `duix_simulator_requests_total{endpoint="getconcurrentList"} 1`+"\n")
	assert.Contains(t, body, `duix_simulator_requests_total{endpoint="getConversationById"} 0`+"\n")
	assert.Contains(t, body, `duix_simulator_requests_total{endpoint="distroyCallSessionsByAppId"} 0`+"\n")
	assert.Zero(t, sim.Requests("/metrics"), "scraping the simulator is not an API request")
}
