package client

import (
	"encoding/json"
	"time"
)

// Conversation is the data object of the conversation-details response
// (docs/platform-api.md#conversation). Objects whose shape the platform
// does not document are kept raw; nullable fields are pointers.
type Conversation struct {
	ID                    string            `json:"id"`
	ConversationName      string            `json:"conversationName"`
	Language              string            `json:"language"`
	CorpID                string            `json:"corpId"`
	UserID                string            `json:"userId"`
	ConversationConfigDto json.RawMessage   `json:"conversationConfigDto"`
	MaxConversation       int               `json:"maxConversation"`
	DataModelIsUsed       int               `json:"dataModelIsUsed"`
	KnowledgeIsUsed       int               `json:"knowledgeIsUsed"`
	FileIsUsed            int               `json:"fileIsUsed"`
	ThirdIsUsed           int               `json:"thirdIsUsed"`
	IsFreedom             int               `json:"isFreedom"`
	AsrProvider           *string           `json:"asrProvider"`
	ConversationInfoDto   ConversationInfo  `json:"conversationInfoDto"`
	DetailDto             Detail            `json:"detailDto"`
	KnowledgeDtoList      []json.RawMessage `json:"knowledgeDtoList"`
	KbConversationDto     json.RawMessage   `json:"kbConversationDto"`
	ModelDtoList          []ModelEntry      `json:"modelDtoList"`
	ThirdDto              json.RawMessage   `json:"thirdDto"`
	ScriptDtoList         []ScriptEntry     `json:"scriptDtoList"`
}

// Gender of a persona (docs/platform-api.md#persona-conversationinfodto).
type Gender int

// Genders named by docs/platform-api.md#persona-conversationinfodto.
const (
	GenderMale   Gender = 1
	GenderFemale Gender = 2
)

func (g Gender) String() string {
	switch g {
	case GenderMale:
		return "male"
	case GenderFemale:
		return "female"
	}
	return "unknown"
}

// ConversationInfo is the persona of a conversation
// (docs/platform-api.md#persona-conversationinfodto).
type ConversationInfo struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	NickName   string `json:"nickName"`
	Gender     Gender `json:"gender"`
	Age        int    `json:"age"`
	Height     int    `json:"height"`
	Weight     int    `json:"weight"`
	Characters string `json:"characters"`
	BackStory  string `json:"backStory"`
}

// ModelIDType tells a cloud digital human from a local one
// (docs/platform-api.md#resources-detaildto).
type ModelIDType int

// Model ID types named by docs/platform-api.md#resources-detaildto.
const (
	ModelCloud ModelIDType = 0
	ModelLocal ModelIDType = 1
)

func (m ModelIDType) String() string {
	switch m {
	case ModelCloud:
		return "cloud"
	case ModelLocal:
		return "local"
	}
	return "unknown"
}

// Detail holds the resources of a conversation: avatar model, background and
// text-to-speech settings (docs/platform-api.md#resources-detaildto).
type Detail struct {
	ID               int64           `json:"id"`
	ConversationID   string          `json:"conversationId"`
	Proportion       string          `json:"proportion"`
	TerminalType     int             `json:"terminalType"`
	ModelID          string          `json:"modelId"`
	ModelIDType      ModelIDType     `json:"modelIdType"`
	ImageID          *string         `json:"imageId"`
	SceneID          *string         `json:"sceneId"`
	ModelName        string          `json:"modelName"`
	SceneType        int             `json:"sceneType"`
	Background       int             `json:"background"`
	BackgroundDto    Background      `json:"backgroundDto"`
	ModelConfig      json.RawMessage `json:"modelConfig"`
	TtsID            string          `json:"ttsId"`
	TtsName          string          `json:"ttsName"`
	TtsConfig        json.RawMessage `json:"ttsConfig"`
	TtsURL           string          `json:"ttsUrl"`
	TtsVolume        int             `json:"ttsVolume"`
	TtsSpeaker       string          `json:"ttsSpeaker"`
	TtsSpeedRate     int             `json:"ttsSpeedRate"`
	TtsPitch         int             `json:"ttsPitch"`
	TtsSource        int             `json:"ttsSource"`
	SamplePictureURL string          `json:"samplePictureUrl"`
	VideoWidth       int             `json:"videoWidth"`
	VideoHeight      int             `json:"videoHeight"`
	HumanProportion  string          `json:"humanProportion"`
	HumanWidth       int             `json:"humanWidth"`
	HumanHeight      int             `json:"humanHeight"`
	HumanX           int             `json:"humanX"`
	HumanY           int             `json:"humanY"`
	LocalModelInfo   json.RawMessage `json:"localModelInfo"`
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

// ModelEntry is one large-model entry of a conversation
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

// ScriptType is the kind of a predefined dialog script
// (docs/platform-api.md#scripts-scriptdtolist).
type ScriptType int

// Script types named by docs/platform-api.md#scripts-scriptdtolist.
const (
	ScriptWakeUpWord           ScriptType = 0
	ScriptOpeningLine          ScriptType = 1
	ScriptWaitingPhrase        ScriptType = 2
	ScriptUnknownQuestion      ScriptType = 3
	ScriptFarewell             ScriptType = 4
	ScriptInterruption         ScriptType = 5
	ScriptInterruptionSentence ScriptType = 6
	ScriptGuidingPhrase        ScriptType = 7
)

// ScriptTypes lists the named script types in order.
var ScriptTypes = []ScriptType{
	ScriptWakeUpWord, ScriptOpeningLine, ScriptWaitingPhrase, ScriptUnknownQuestion,
	ScriptFarewell, ScriptInterruption, ScriptInterruptionSentence, ScriptGuidingPhrase,
}

func (t ScriptType) String() string {
	switch t {
	case ScriptWakeUpWord:
		return "wake-up word"
	case ScriptOpeningLine:
		return "opening line"
	case ScriptWaitingPhrase:
		return "waiting phrase"
	case ScriptUnknownQuestion:
		return "unknown question"
	case ScriptFarewell:
		return "farewell"
	case ScriptInterruption:
		return "interruption"
	case ScriptInterruptionSentence:
		return "interruption sentence"
	case ScriptGuidingPhrase:
		return "guiding phrase"
	}
	return "unknown type"
}

// ScriptEntry is one predefined dialog script
// (docs/platform-api.md#scripts-scriptdtolist).
type ScriptEntry struct {
	ID             int64      `json:"id"`
	ConversationID string     `json:"conversationId"`
	ScriptType     ScriptType `json:"scriptType"`
	ScriptContent  string     `json:"scriptContent"`
	TtsContent     *string    `json:"ttsContent"`
	Emotion        string     `json:"emotion"`
}

// Concurrency is the real-time concurrency status of an app
// (docs/platform-api.md#concurrency).
type Concurrency struct {
	// CropID identifies the owning organization; the platform spells it cropId.
	CropID string `json:"cropId"`
	// TotalConcurrentNumber is the app's concurrency allowance.
	TotalConcurrentNumber int64 `json:"totalConcurrentNumber"`
	// UserConcurrentNumber is the number of the allowance in use.
	UserConcurrentNumber int64 `json:"userConcurrentNumber"`
}

// Session is one active (in-call) session of an app
// (docs/platform-api.md#session-list). The platform does not document the
// record, so only the ID, the conversation and the start are interpreted;
// the whole record is kept in Raw when asked for.
type Session struct {
	ID             string          `json:"id"`
	ConversationID string          `json:"conversationId,omitempty"`
	Start          *time.Time      `json:"start,omitempty"`
	Raw            json.RawMessage `json:"record,omitempty"`
}

// StopResult is the platform's answer to a successful sessionStop or
// distroyCallSessionsByAppId.
type StopResult struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}
