package client

import (
	"encoding/json"
	"time"
)

// Concurrency is an app's concurrency status (docs/platform-api.md#concurrency).
type Concurrency struct {
	// CropID identifies the owning organization; the platform spells it cropId.
	CropID string `json:"cropId"`
	// TotalConcurrentNumber is the app's concurrency allowance.
	TotalConcurrentNumber int64 `json:"totalConcurrentNumber"`
	// UserConcurrentNumber is the number of the allowance in use.
	UserConcurrentNumber int64 `json:"userConcurrentNumber"`
}

// Session is an active session of an app (docs/platform-api.md#session-list):
// ID, conversation and start of its undocumented record, kept in Raw if asked.
type Session struct {
	ID             string          `json:"id"`
	ConversationID string          `json:"conversationId,omitempty"`
	Start          *time.Time      `json:"start,omitempty"`
	Raw            json.RawMessage `json:"record,omitempty"`
}

// StopResult is a successful sessionStop's or distroyCallSessionsByAppId's answer (Code as Error.Code).
type StopResult struct {
	Code string          `json:"code"`
	Data json.RawMessage `json:"data,omitempty"`
}
