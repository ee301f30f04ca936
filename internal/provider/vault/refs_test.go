package vault

import (
	"testing"
	"time"

	"github.com/watchword-dev/watchword/internal/provider/providertest"
)

func TestRefsNameEveryCredentialField(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "vault")
}

// A version with a deletion time in the future (delete_version_after) is
// readable until then, and listed; one whose time has passed is not.
func TestDeletedByDeletionTime(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]bool{
		"":                               false,
		"2026-11-27T13:00:00.123456789Z": false,
		"2026-11-27T11:59:59Z":           true,
		"2026-11-27T12:00:00Z":           true,
		"not a time":                     true,
	} {
		if got := deletedBy(in, now); got != want {
			t.Errorf("deletedBy(%q) = %v, want %v", in, got, want)
		}
	}
}
