package operator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duix-exporter/duix_exporter/client"
	"github.com/duix-exporter/duix_exporter/internal/platformtest"
	"github.com/duix-exporter/duix_exporter/simulator"
)

func TestConversationShowText(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "conversation", "show", "--app=sales-avatar", "--id=2081")
	require.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)
	out := res.stdout

	// Sections in order, each with its figures.
	var last int
	for _, want := range []string{
		"Conversation 2081 of app sales-avatar\n",
		"  name               新品导购\n",
		"  maxConversation    12\n",
		"  language           zh\n",
		"  ASR provider       aliyun\n",
		"\nPersona\n", "  name               小安\n", "  nickname           安安\n", "  gender             female\n", "  age                26\n",
		"\nAvatar model\n", "  name               Lily\n", "  model ID           1722918530281359393\n",
		"  type               cloud (modelIdType 0)\n", "  proportion         9:16\n", "  video size         1080x1920\n",
		"\nBackground\n", "  name               明亮办公室\n", "  code               bg_office_01\n",
		"\nTTS\n", "  name               guina\n", "  speaker            guina\n", "  speed              50\n",
		"  volume             50\n", "  pitch              50\n",
		"\nLarge models (1)\n", "  chatbot_law\n", "    model ID         law-assistant-v2\n",
		"\nScripts (8)\n",
		"  wake-up word\n    - 你好小安  [emotion 0]\n",
		"  opening line\n    - 您好，我是小安，很高兴为您服务，请问有什么可以帮您？  [emotion 1, audio /duix/tts/2081/script_1.wav]\n",
		"  waiting phrase\n", "  unknown question\n", "  farewell\n", "  interruption\n", "  interruption sentence\n", "  guiding phrase\n",
	} {
		i := strings.Index(out[last:], want)
		if !assert.GreaterOrEqual(t, i, 0, "%q after offset %d in:\n%s", want, last, out) {
			continue
		}
		last += i + len(want)
	}
}

func TestConversationShowGroupsScriptsByType(t *testing.T) {
	p := startPlatform(t)
	app := p.id("museum-guide")
	conv := simulator.NewConversation("3099", "groups", 4)
	conv.ScriptDtoList = []simulator.ScriptEntry{
		{ID: 1, ScriptType: simulator.ScriptFarewell, ScriptContent: "bye one"},
		{ID: 2, ScriptType: 42, ScriptContent: "from the future"},
		{ID: 3, ScriptType: simulator.ScriptWakeUpWord, ScriptContent: "hello"},
		{ID: 4, ScriptType: simulator.ScriptFarewell, ScriptContent: "bye two"},
	}
	conv.ConversationInfoDto.Gender = 1
	conv.DetailDto.ModelIDType = 1
	require.NoError(t, p.sim.AddConversation(app, conv))

	res := p.run(t, nil, "conversation", "show", "--app=museum-guide", "--id=3099")
	require.Equal(t, exitOK, res.code)
	assert.Contains(t, res.stdout, "\nScripts (4)\n"+
		"  wake-up word\n    - hello  [emotion -]\n"+
		"  farewell\n    - bye one  [emotion -]\n    - bye two  [emotion -]\n"+
		"  script type 42\n    - from the future  [emotion -]\n")
	assert.Contains(t, res.stdout, "  gender             male\n")
	assert.Contains(t, res.stdout, "  type               local (modelIdType 1)\n")
}

func TestConversationShowJSON(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "conversation", "show", "--app=support-desk", "--id=1082", "--output=json")
	require.Equal(t, exitOK, res.code)
	var conv client.Conversation
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &conv), res.stdout)
	assert.Equal(t, "1082", conv.ID)
	assert.Equal(t, "技术支持", conv.ConversationName)
	assert.Equal(t, 4, conv.MaxConversation)
	assert.Equal(t, "guina", conv.DetailDto.TtsName)
	assert.Equal(t, "chatbot_law", conv.ModelDtoList[0].LargeName)
	assert.Len(t, conv.ScriptDtoList, 8)
	assert.Equal(t, client.ScriptOpeningLine, conv.ScriptDtoList[1].ScriptType)
}

func TestConversationShowErrors(t *testing.T) {
	p := startPlatform(t)
	res := p.run(t, nil, "conversation", "show", "--app=support-desk", "--id=9999")
	assert.Equal(t, exitNotFound, res.code)
	assert.Contains(t, res.stderr, "conversation 9999 of app support-desk: not found")
	assert.Empty(t, res.stdout)

	// A conversation of another app is not found either.
	res = p.run(t, nil, "conversation", "show", "--app=support-desk", "--id=2081")
	assert.Equal(t, exitNotFound, res.code)

	p.faults.SetFault(p.id("support-desk"), simulator.EndpointConversation, platformtest.Fault{Kind: platformtest.FaultWrongTypes})
	res = p.run(t, nil, "conversation", "show", "--app=support-desk", "--id=1081", "--output=json")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stderr, "fetching conversation 1081 of app support-desk: getConversationById (app support-desk): decode: ")
	assert.Empty(t, res.stdout)

	p.faults.SetFault(p.id("support-desk"), simulator.EndpointConversation, platformtest.Fault{Kind: platformtest.FaultRateLimit429})
	res = p.run(t, nil, "conversation", "show", "--app=support-desk", "--id=1081")
	assert.Equal(t, exitFailed, res.code)
	assert.Contains(t, res.stderr, "getConversationById (app support-desk): rate_limited: HTTP 429")
}
