package operator

import "encoding/json"

// The details of a conversation as getConversationById gives them, for
// conversation show: the collector decodes only the fields it uses.

// Conversation is a conversation's details (docs/platform-api.md#conversation);
// undocumented objects are kept raw, nullable fields are pointers.
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

// ConversationInfo is a conversation's persona (docs/platform-api.md#persona-conversationinfodto).
type ConversationInfo struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	NickName   string `json:"nickName"`
	Gender     int    `json:"gender"` // 1 male, 2 female
	Age        int    `json:"age"`
	Height     int    `json:"height"`
	Weight     int    `json:"weight"`
	Characters string `json:"characters"`
	BackStory  string `json:"backStory"`
}

// Detail is a conversation's avatar model, background and TTS (docs/platform-api.md#resources-detaildto).
type Detail struct {
	ID               int64           `json:"id"`
	ConversationID   string          `json:"conversationId"`
	Proportion       string          `json:"proportion"`
	TerminalType     int             `json:"terminalType"`
	ModelID          string          `json:"modelId"`
	ModelIDType      int             `json:"modelIdType"` // 0 cloud, 1 local
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

// Background is a conversation's background (docs/platform-api.md#resources-detaildto).
type Background struct {
	ID             int64   `json:"id"`
	BackgroundCode string  `json:"backgroundCode"`
	BackgroundName string  `json:"backgroundName"`
	BackgroundURL  string  `json:"backgroundUrl"`
	FileType       int     `json:"fileType"`
	Proportion     string  `json:"proportion"`
	UserID         *string `json:"userId"`
}

// ModelEntry is a conversation's large model (docs/platform-api.md#large-models-modeldtolist).
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

// ScriptType is the kind of a dialog script (docs/platform-api.md#scripts-scriptdtolist).
type ScriptType int

// Script types, in the platform's order.
const (
	ScriptWakeUpWord ScriptType = iota
	ScriptOpeningLine
	ScriptWaitingPhrase
	ScriptUnknownQuestion
	ScriptFarewell
	ScriptInterruption
	ScriptInterruptionSentence
	ScriptGuidingPhrase
)

// ScriptEntry is a predefined dialog script (docs/platform-api.md#scripts-scriptdtolist).
type ScriptEntry struct {
	ID             int64      `json:"id"`
	ConversationID string     `json:"conversationId"`
	ScriptType     ScriptType `json:"scriptType"`
	ScriptContent  string     `json:"scriptContent"`
	TtsContent     *string    `json:"ttsContent"`
	Emotion        string     `json:"emotion"`
}
