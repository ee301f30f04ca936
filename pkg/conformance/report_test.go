package conformance

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestCheckReportsOutsideGoTest: Check gives one result per check, in
// order: a conforming store passes, a flawed one fails with messages
// that name the problem, and what does not apply is skipped with why.
func TestCheckReportsOutsideGoTest(t *testing.T) {
	var out bytes.Buffer
	if err := Print(&out, newMemStore(flaws{}).harness()); err != nil {
		t.Fatalf("a conforming store: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(checks)+1 || !strings.HasPrefix(lines[0], "PASS "+checks[0].name) || !strings.Contains(lines[len(lines)-1], " 0 failed") {
		t.Fatalf("a conforming store's report:\n%s", out.String())
	}
	// The memory store has no batch reads and no watch: only the checks
	// of those are skipped, saying which capability they need.
	for _, l := range lines[:len(lines)-1] {
		if strings.HasPrefix(l, "SKIP ") && !strings.Contains(l, "the check needs") {
			t.Errorf("a check skipped for another reason than a missing capability: %s", l)
		}
	}

	h := newMemStore(flaws{writesOverForeign: true}).harness()
	h.Seed = nil
	results, err := Check(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Result{}
	for _, r := range results {
		byName[r.Check] = r
	}
	if r := byName["WriteRefusesOtherOwner"]; r.Outcome != Fail || !strings.Contains(r.String(), "ErrNotOwned") {
		t.Errorf("a store that writes over another owner's secret: %s", r)
	}
	if r := byName["ReadCurrent"]; r.Outcome != Skip || !strings.Contains(r.String(), "no Seed") {
		t.Errorf("a check that needs Seed, without Seed: %s", r)
	}
	if r := byName["ReadMissingKey"]; r.Outcome != Pass {
		t.Errorf("ReadMissingKey: %s", r)
	}

	h = newMemStore(flaws{}).harness()
	h.SkipWrites = "give --write-prefix to run the write checks"
	out.Reset()
	if err := Print(&out, h); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "SKIP WriteReadBack: store \"memory\": give --write-prefix") {
		t.Errorf("SkipWrites did not skip the write checks:\n%s", out.String())
	}

	h = newMemStore(flaws{missingIsPlainError: true}).harness()
	out.Reset()
	if err := Print(&out, h); !errors.Is(err, ErrFailed) || !strings.Contains(out.String(), "FAIL ReadMissingKey") || !strings.Contains(out.String(), "3 failed") {
		t.Errorf("a flawed store: %v\n%s", err, out.String())
	}
}
