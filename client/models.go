package client

import (
	"encoding/json"
	"time"
)

// Concurrency is an app's concurrency status (docs/platform-api.md#concurrency).
type Concurrency struct {
	CropID                string `json:"cropId"`                // the owning organization (the platform's spelling)
	TotalConcurrentNumber int64  `json:"totalConcurrentNumber"` // the app's concurrency allowance
	UserConcurrentNumber  int64  `json:"userConcurrentNumber"`  // how much of it is in use
}

// Session is an active session of an app (docs/platform-api.md#session-list):
// ID, conversation and start of its undocumented record, kept in Raw if asked.
type Session struct {
	ID             string          `json:"id"`
	ConversationID string          `json:"conversationId,omitempty"`
	Start          *time.Time      `json:"start,omitempty"`
	Raw            json.RawMessage `json:"record,omitempty"`
}
