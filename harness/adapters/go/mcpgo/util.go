package main

import (
	"encoding/json"

	"listsync.local/adapters/internal/control"
)

func jsonUnmarshal(raw json.RawMessage, v any) error { return control.Unmarshal(raw, v) }
