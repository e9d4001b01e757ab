package simulator

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// conversationSample is the data object of a getConversationById answer
// (docs/platform-api.md#conversation), with the values the platform's
// documented sample gives. Strings such as "$id" stand for the values of
// a Conversation that record puts in.
//
//go:embed conversation.json
var conversationSample []byte

// conversationTemplate is conversationSample without white space.
var conversationTemplate = func() string {
	var b bytes.Buffer
	if err := json.Compact(&b, conversationSample); err != nil {
		panic("simulator: conversation.json: " + err.Error())
	}
	return b.String()
}()

// Conversation is a conversation of the simulated platform. Its answer is
// the sample record of conversation.json with these values put in; the
// nested records get integer IDs derived from ID.
type Conversation struct {
	ID               string
	ConversationName string
	CorpID           string // empty: the app's (AddConversation)
	UserID           string
	MaxConversation  int
	// ConversationInfoDto holds the persona's gender: 1 male, 2 female.
	ConversationInfoDto ConversationInfo
	// DetailDto holds the avatar's modelIdType: 0 cloud, 1 local.
	DetailDto Detail
	// ScriptDtoList is sent in this order; nil is sent as [].
	ScriptDtoList []ScriptEntry
}

// ConversationInfo is what a Conversation sets of its persona
// (docs/platform-api.md#persona-conversationinfodto).
type ConversationInfo struct{ Gender int }

// Detail is what a Conversation sets of its avatar
// (docs/platform-api.md#resources-detaildto).
type Detail struct{ ModelIDType int }

// ScriptEntry is a dialog script of a conversation
// (docs/platform-api.md#scripts-scriptdtolist).
type ScriptEntry struct {
	ID            int64
	ScriptType    int
	ScriptContent string
	TTSContent    string // the audio URL, sent as null when empty
	Emotion       string
}

// Script types of ScriptEntry.ScriptType, the numbers the platform sends
// (docs/platform-api.md#scripts-scriptdtolist).
const (
	ScriptWakeUpWord           = 0
	ScriptOpeningLine          = 1
	ScriptWaitingPhrase        = 2
	ScriptUnknownQuestion      = 3
	ScriptFarewell             = 4
	ScriptInterruption         = 5
	ScriptInterruptionSentence = 6
	ScriptGuidingPhrase        = 7
)

// sampleScripts are the scripts of NewConversation, one of each type.
var sampleScripts = []struct {
	content string
	audio   bool
	emotion string
}{
	ScriptWakeUpWord:           {"你好小安", false, "0"},
	ScriptOpeningLine:          {"您好，我是小安，很高兴为您服务，请问有什么可以帮您？", true, "1"},
	ScriptWaitingPhrase:        {"请稍等，我正在为您查询。", true, "0"},
	ScriptUnknownQuestion:      {"抱歉，这个问题我暂时无法回答，您可以换个问法试试。", true, "0"},
	ScriptFarewell:             {"感谢您的咨询，祝您生活愉快，再见！", true, "1"},
	ScriptInterruption:         {"好的", false, "0"},
	ScriptInterruptionSentence: {"好的，您请说。", true, "0"},
	ScriptGuidingPhrase:        {"您可以问我关于合同、劳动和婚姻家庭方面的法律问题。", true, "0"},
}

// NewConversation returns a complete, plausible conversation with the given
// ID, name and maxConversation: the sample record (language "zh", a female
// persona, a cloud avatar with TTS voice "guina" and a background, one
// large-model entry "chatbot_law") and one script of each type 0 to 7. The
// same arguments always give the same record. CorpID and UserID are left
// empty; AddConversation fills CorpID from the application.
func NewConversation(id, name string, maxConversation int) Conversation {
	c := Conversation{ID: id, ConversationName: name, MaxConversation: maxConversation,
		ConversationInfoDto: ConversationInfo{Gender: 2}}
	base := idBase(id)
	for typ, sc := range sampleScripts {
		e := ScriptEntry{ID: base*1000 + 300 + int64(typ), ScriptType: typ, ScriptContent: sc.content, Emotion: sc.emotion}
		if sc.audio {
			e.TTSContent = "/duix/tts/" + id + "/script_" + strconv.Itoa(typ) + ".wav"
		}
		c.ScriptDtoList = append(c.ScriptDtoList, e)
	}
	return c
}

// record returns the data object of c's getConversationById answer.
func (c Conversation) record() []byte {
	base := idBase(c.ID)
	jsonText := func(s string) string { return string(appendJSONString(nil, s)) }
	scripts := []byte{'['}
	for i, s := range c.ScriptDtoList {
		if i > 0 {
			scripts = append(scripts, ',')
		}
		tts := "null"
		if s.TTSContent != "" {
			tts = jsonText(s.TTSContent)
		}
		scripts = fmt.Appendf(scripts, `{"id":%d,"conversationId":%s,"scriptType":%d,"scriptContent":%s,"ttsContent":%s,"emotion":%s}`,
			s.ID, jsonText(c.ID), s.ScriptType, jsonText(s.ScriptContent), tts, jsonText(s.Emotion))
	}
	scripts = append(scripts, ']')
	return []byte(strings.NewReplacer(
		`"$id"`, jsonText(c.ID),
		`"$conversationName"`, jsonText(c.ConversationName),
		`"$corpId"`, jsonText(c.CorpID),
		`"$userId"`, jsonText(c.UserID),
		`"$maxConversation"`, strconv.Itoa(c.MaxConversation),
		`"$personaId"`, strconv.FormatInt(base*1000+1, 10),
		`"$gender"`, strconv.Itoa(c.ConversationInfoDto.Gender),
		`"$detailId"`, strconv.FormatInt(base*1000+2, 10),
		`"$modelId"`, jsonText(strconv.FormatInt(1722918530281357312+base, 10)),
		`"$modelIdType"`, strconv.Itoa(c.DetailDto.ModelIDType),
		`"$backgroundId"`, strconv.FormatInt(base*1000+3, 10),
		`"$modelEntryId"`, strconv.FormatInt(base*1000+4, 10),
		`"$scriptDtoList"`, string(scripts),
	).Replace(conversationTemplate))
}

// idBase derives a stable positive integer from a conversation ID, used to
// give the nested records distinct, repeatable integer IDs.
func idBase(id string) int64 {
	if n, err := strconv.ParseInt(id, 10, 64); err == nil && n > 0 && n < 1<<40 {
		return n
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int64(h.Sum32()%900000) + 100000
}
