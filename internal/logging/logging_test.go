package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"

	"github.com/watchword-dev/watchword/internal/failure"
)

func lines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for l := range strings.Lines(b.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a line that is not JSON: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// A failed reconcile is one info line with its reason and no stack
// trace; another error stays an error, also without a stack trace.
func TestFailedReconcileIsAnInfoLine(t *testing.T) {
	var b bytes.Buffer
	log := New(Options{Level: zapcore.InfoLevel, Out: &b}).WithName("externalsecret").WithValues("namespace", "team-a")
	log.Error(failure.Retryf(failure.StoreUnavailable, `SecretStore "vault" is unreachable`), "Reconciler error", "name", "db")
	log.Error(errors.New("the webhook's certificate cannot be written"), "keeping the webhook's certificate current")

	got := lines(t, &b)
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2: %s", len(got), b.String())
	}
	first := got[0]
	for k, want := range map[string]any{"level": "info", "reason": "StoreUnavailable", "terminal": false,
		"error": `SecretStore "vault" is unreachable`, "namespace": "team-a", "name": "db", "logger": "externalsecret"} {
		if first[k] != want {
			t.Errorf("the failed reconcile's %s = %v, want %v (%s)", k, first[k], want, b.String())
		}
	}
	if second := got[1]; second["level"] != "error" {
		t.Errorf("another error was written at level %v, want error", second["level"])
	}
	for i, l := range got {
		if _, ok := l["stacktrace"]; ok {
			t.Errorf("line %d carries a stack trace", i)
		}
		if c, _ := l["caller"].(string); c != "" && !strings.HasPrefix(c, "logging/logging_test.go") {
			t.Errorf("line %d names caller %q, want this test's file", i, c)
		}
	}
}

// The lease released at a clean stop is no error: a debug line.
func TestReleasedLeaseAtStopIsNoError(t *testing.T) {
	var info, debug bytes.Buffer
	for _, c := range []struct {
		level zapcore.Level
		out   *bytes.Buffer
	}{{zapcore.InfoLevel, &info}, {zapcore.DebugLevel, &debug}} {
		New(Options{Level: c.level, Out: c.out}).Error(errors.New("leader election lost"), "error received after stop sequence was engaged")
	}
	if info.Len() != 0 {
		t.Errorf("at info level: %s", info.String())
	}
	if got := lines(t, &debug); len(got) != 1 || got[0]["level"] != "debug" {
		t.Errorf("at debug level: %s", debug.String())
	}
	// The same message with another error is still an error.
	var b bytes.Buffer
	New(Options{Level: zapcore.InfoLevel, Out: &b}).Error(errors.New("cache sync timed out"), "error received after stop sequence was engaged")
	if got := lines(t, &b); len(got) != 1 || got[0]["level"] != "error" {
		t.Errorf("another late error: %s", b.String())
	}
}
