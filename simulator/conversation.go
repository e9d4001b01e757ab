package simulator

import (
	"hash/fnv"
	"strconv"
)

// Conversation is the data object of the getConversationById response
// (docs/platform-api.md#conversation). Fields typed "object or null" by the
// platform, whose inner shape is not documented, are free-form maps: a nil
// map is sent as null.
type Conversation struct {
	ID                    string           `json:"id"`
	ConversationName      string           `json:"conversationName"`
	Language              string           `json:"language"`
	CorpID                string           `json:"corpId"`
	UserID                string           `json:"userId"`
	ConversationConfigDto map[string]any   `json:"conversationConfigDto"`
	MaxConversation       int              `json:"maxConversation"`
	DataModelIsUsed       int              `json:"dataModelIsUsed"`
	KnowledgeIsUsed       int              `json:"knowledgeIsUsed"`
	FileIsUsed            int              `json:"fileIsUsed"`
	ThirdIsUsed           int              `json:"thirdIsUsed"`
	IsFreedom             int              `json:"isFreedom"`
	AsrProvider           *string          `json:"asrProvider"`
	ConversationInfoDto   ConversationInfo `json:"conversationInfoDto"`
	DetailDto             Detail           `json:"detailDto"`
	KnowledgeDtoList      []map[string]any `json:"knowledgeDtoList"`
	KbConversationDto     map[string]any   `json:"kbConversationDto"`
	ModelDtoList          []ModelEntry     `json:"modelDtoList"`
	ThirdDto              map[string]any   `json:"thirdDto"`
	ScriptDtoList         []ScriptEntry    `json:"scriptDtoList"`
}

// ConversationInfo is the persona of a conversation
// (docs/platform-api.md#persona-conversationinfodto).
type ConversationInfo struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	NickName   string `json:"nickName"`
	Gender     int    `json:"gender"`
	Age        int    `json:"age"`
	Height     int    `json:"height"`
	Weight     int    `json:"weight"`
	Characters string `json:"characters"`
	BackStory  string `json:"backStory"`
}

// Detail holds the resource details of a conversation: avatar model,
// background and text-to-speech settings
// (docs/platform-api.md#resources-detaildto).
type Detail struct {
	ID               int64          `json:"id"`
	ConversationID   string         `json:"conversationId"`
	Proportion       string         `json:"proportion"`
	TerminalType     int            `json:"terminalType"`
	ModelID          string         `json:"modelId"`
	ModelIDType      int            `json:"modelIdType"`
	ImageID          *string        `json:"imageId"`
	SceneID          *string        `json:"sceneId"`
	ModelName        string         `json:"modelName"`
	SceneType        int            `json:"sceneType"`
	Background       int            `json:"background"`
	BackgroundDto    Background     `json:"backgroundDto"`
	ModelConfig      map[string]any `json:"modelConfig"`
	TTSID            string         `json:"ttsId"`
	TTSName          string         `json:"ttsName"`
	TTSConfig        map[string]any `json:"ttsConfig"`
	TTSURL           string         `json:"ttsUrl"`
	TTSVolume        int            `json:"ttsVolume"`
	TTSSpeaker       string         `json:"ttsSpeaker"`
	TTSSpeedRate     int            `json:"ttsSpeedRate"`
	TTSPitch         int            `json:"ttsPitch"`
	TTSSource        int            `json:"ttsSource"`
	SamplePictureURL string         `json:"samplePictureUrl"`
	VideoWidth       int            `json:"videoWidth"`
	VideoHeight      int            `json:"videoHeight"`
	HumanProportion  string         `json:"humanProportion"`
	HumanWidth       int            `json:"humanWidth"`
	HumanHeight      int            `json:"humanHeight"`
	HumanX           int            `json:"humanX"`
	HumanY           int            `json:"humanY"`
	LocalModelInfo   map[string]any `json:"localModelInfo"`
}

// Background is the background resource of a conversation
// (docs/platform-api.md#resources-detaildto).
type Background struct {
	ID             int64   `json:"id"`
	BackgroundCode string  `json:"backgroundCode"`
	BackgroundName string  `json:"backgroundName"`
	BackgroundURL  string  `json:"backgroundUrl"`
	FileType       int     `json:"fileType"`
	Proportion     string  `json:"proportion"`
	UserID         *string `json:"userId"`
}

// ModelEntry is one element of modelDtoList
// (docs/platform-api.md#large-models-modeldtolist).
type ModelEntry struct {
	ID             int64  `json:"id"`
	ConversationID string `json:"conversationId"`
	LargeModelType int    `json:"largeModelType"`
	ModelCode      int    `json:"modelCode"`
	LargeName      string `json:"largeName"`
	ModelID        string `json:"modelId"`
	Prompt         string `json:"prompt"`
	BotURL         string `json:"botUrl"`
}

// ScriptEntry is one element of scriptDtoList
// (docs/platform-api.md#scripts-scriptdtolist).
type ScriptEntry struct {
	ID             int64   `json:"id"`
	ConversationID string  `json:"conversationId"`
	ScriptType     int     `json:"scriptType"`
	ScriptContent  string  `json:"scriptContent"`
	TTSContent     *string `json:"ttsContent"`
	Emotion        string  `json:"emotion"`
}

// Script types of ScriptEntry.ScriptType
// (docs/platform-api.md#scripts-scriptdtolist).
const (
	ScriptWakeUpWord = iota
	ScriptOpeningLine
	ScriptWaitingPhrase
	ScriptUnknownQuestion
	ScriptFarewell
	ScriptInterruption
	ScriptInterruptionSentence
	ScriptGuidingPhrase
)

// NewConversation returns a complete, plausible conversation record with
// the given ID, name and maxConversation: language "zh", a persona, an
// avatar with TTS voice "guina" and a background, one large-model entry
// ("chatbot_law") and one script of each type 0 to 7. Integer IDs are
// derived from id, so the same arguments always give the same record.
// CorpID and UserID are left empty; AddConversation fills CorpID from the
// application when it is empty.
func NewConversation(id, name string, maxConversation int) Conversation {
	base := idBase(id)
	str := func(s string) *string { return &s }

	scripts := []struct {
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
	scriptList := make([]ScriptEntry, 0, len(scripts))
	for typ, sc := range scripts {
		e := ScriptEntry{
			ID:             base*1000 + 300 + int64(typ),
			ConversationID: id,
			ScriptType:     typ,
			ScriptContent:  sc.content,
			Emotion:        sc.emotion,
		}
		if sc.audio {
			e.TTSContent = str("/duix/tts/" + id + "/script_" + strconv.Itoa(typ) + ".wav")
		}
		scriptList = append(scriptList, e)
	}

	return Conversation{
		ID:                    id,
		ConversationName:      name,
		Language:              "zh",
		ConversationConfigDto: nil,
		MaxConversation:       maxConversation,
		DataModelIsUsed:       1,
		KnowledgeIsUsed:       0,
		FileIsUsed:            0,
		ThirdIsUsed:           0,
		IsFreedom:             0,
		AsrProvider:           str("aliyun"),
		ConversationInfoDto: ConversationInfo{
			ID:         base*1000 + 1,
			Name:       "小安",
			NickName:   "安安",
			Gender:     2,
			Age:        26,
			Height:     165,
			Weight:     50,
			Characters: "耐心、专业、亲切",
			BackStory:  "小安是一名法律咨询助理，擅长用通俗易懂的语言解答常见法律问题。",
		},
		DetailDto: Detail{
			ID:             base*1000 + 2,
			ConversationID: id,
			Proportion:     "9:16",
			TerminalType:   1,
			ModelID:        strconv.FormatInt(1722918530281357312+base, 10),
			ModelIDType:    0,
			ImageID:        nil,
			SceneID:        nil,
			ModelName:      "Lily",
			SceneType:      1,
			Background:     1,
			BackgroundDto: Background{
				ID:             base*1000 + 3,
				BackgroundCode: "bg_office_01",
				BackgroundName: "明亮办公室",
				BackgroundURL:  "/duix/background/bg_office_01.png",
				FileType:       1,
				Proportion:     "9:16",
				UserID:         nil,
			},
			ModelConfig:      nil,
			TTSID:            "1743112343141048321",
			TTSName:          "guina",
			TTSConfig:        nil,
			TTSURL:           "",
			TTSVolume:        50,
			TTSSpeaker:       "guina",
			TTSSpeedRate:     50,
			TTSPitch:         50,
			TTSSource:        1,
			SamplePictureURL: "/duix/sample/lily_9x16.png",
			VideoWidth:       1080,
			VideoHeight:      1920,
			HumanProportion:  "9:16",
			HumanWidth:       1080,
			HumanHeight:      1920,
			HumanX:           0,
			HumanY:           0,
			LocalModelInfo:   nil,
		},
		KnowledgeDtoList:  []map[string]any{},
		KbConversationDto: nil,
		ModelDtoList: []ModelEntry{{
			ID:             base*1000 + 4,
			ConversationID: id,
			LargeModelType: 1,
			ModelCode:      1,
			LargeName:      "chatbot_law",
			ModelID:        "law-assistant-v2",
			Prompt:         "你是一名专业的法律咨询助理，请用简洁、准确的语言回答用户的问题。",
			BotURL:         "",
		}},
		ThirdDto:      nil,
		ScriptDtoList: scriptList,
	}
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
