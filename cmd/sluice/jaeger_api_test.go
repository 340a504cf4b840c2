package main

// Reading Jaeger's query API: the parts of a trace the Jaeger test checks.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// jaegerTrace is the part of Jaeger's /api/traces/{id} answer the test
// reads.
type jaegerTrace struct {
	TraceID string       `json:"traceID"`
	Spans   []jaegerSpan `json:"spans"`
	// Processes maps a span's processID to its service.
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	ProcessID     string `json:"processID"`
	References    []struct {
		RefType string `json:"refType"` // CHILD_OF (the parent), FOLLOWS_FROM (a link)
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

// tag returns the value of the span's tag key, formatted; "" if none.
func (s jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// parent returns the span's parent's id, or "".
func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" && r.TraceID == s.TraceID {
			return r.SpanID
		}
	}
	return ""
}

// linksOut returns the ids of the spans it links to in other traces.
func (s jaegerSpan) linksOut() []string {
	var ids []string
	for _, r := range s.References {
		if r.TraceID != s.TraceID {
			ids = append(ids, r.TraceID+"/"+r.SpanID)
		}
	}
	return ids
}

// getTrace asks Jaeger for a trace; nil when it has none (yet).
func getTrace(t *testing.T, c *http.Client, query, id string) *jaegerTrace {
	t.Helper()
	resp, err := c.Get(query + "/api/traces/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var body struct {
		Data []jaegerTrace `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/api/traces/%s: status %d, %v", query, id, resp.StatusCode, err)
	}
	if len(body.Data) == 0 {
		return nil
	}
	return &body.Data[0]
}

// missingSpans returns the names of want that trace has no span of.
func missingSpans(tr *jaegerTrace, want []string) []string {
	var missing []string
	for _, name := range want {
		if tr == nil || !slices.ContainsFunc(tr.Spans, func(s jaegerSpan) bool { return s.OperationName == name }) {
			missing = append(missing, name)
		}
	}
	return missing
}

func describe(tr *jaegerTrace) string {
	if tr == nil {
		return "no trace"
	}
	var parts []string
	for _, s := range tr.Spans {
		parts = append(parts, fmt.Sprintf("%s (span %s, parent %s, links %v)", s.OperationName, s.SpanID, s.parent(), s.linksOut()))
	}
	return strings.Join(parts, "; ")
}
