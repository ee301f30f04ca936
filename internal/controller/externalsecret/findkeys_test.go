package externalsecret

import (
	"slices"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// finding is an ExternalSecret with one find, which matched matched at
// its last sync.
func finding(path, name string, matched ...string) *v1alpha1.ExternalSecret {
	es := reading("ns", v1alpha1.StoreRef{Name: "s"}, "named")
	f := &v1alpha1.ExternalSecretFind{Path: path}
	if name != "" {
		f.Name = &v1alpha1.FindName{RegExp: name}
	}
	es.Spec.DataFrom = append(es.Spec.DataFrom, v1alpha1.ExternalSecretDataFrom{Find: f})
	for _, k := range matched {
		es.Status.Versions = append(es.Status.Versions, v1alpha1.RemoteVersion{Key: k, Version: "1"})
	}
	return es
}

// TestAFindReadsWhatItMatchedAndWhatItWouldMatch: a notice of a key a find
// matched at the last sync, or of a new key under its path that its name
// matches, makes the sync due; a key outside the find does not.
func TestAFindReadsWhatItMatchedAndWhatItWouldMatch(t *testing.T) {
	es := finding("app/", "db-", "app/db-user")
	store := StoreKey(v1alpha1.SecretStoreKind, "ns", "s")
	if got := readKeys(es, store, nil); !slices.Equal(got, []string{"named", "app/db-user"}) {
		t.Fatalf("readKeys(nil) = %v, want the named key and the matched one", got)
	}
	got := readKeys(es, store, []string{"app/db-user", "app/db-new", "app/web", "other/db-x", "named"})
	if want := []string{"app/db-user", "app/db-new", "named"}; !slices.Equal(got, want) {
		t.Fatalf("readKeys = %v, want %v", got, want)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	last := now.Add(-10 * time.Minute)
	s := schedule{now: now, interval: time.Hour, lastRead: &last}
	if s.withNotices(es, map[string]time.Time{"app/web": now}).due() {
		t.Fatal("a notice of a key the find does not match made the sync due")
	}
	if n := s.withNotices(es, map[string]time.Time{"app/db-new": now}); !n.due() {
		t.Fatal("a notice of a new key the find matches did not make the sync due")
	}
}

// TestWithoutAFindTheStatusVersionsDoNotCount: an ExternalSecret without
// finds reads only the keys of its spec.
func TestWithoutAFindTheStatusVersionsDoNotCount(t *testing.T) {
	es := reading("ns", v1alpha1.StoreRef{Name: "s"}, "a")
	es.Status.Versions = []v1alpha1.RemoteVersion{{Key: "stale", Version: "1"}}
	if readsKey(es, "stale") {
		t.Fatal("a key of the status, which the spec no longer names, counted as read")
	}
}

func TestFindChangesCountsNeverNames(t *testing.T) {
	before := []v1alpha1.FoundCount{{DataFrom: 0, Matched: 2}, {DataFrom: 2, Matched: 1}}
	after := []v1alpha1.FoundCount{{DataFrom: 0, Matched: 3}, {DataFrom: 2, Matched: 1}, {DataFrom: 3, Matched: 0}}
	want := "dataFrom[0].find matched 3 remote objects (was 2); dataFrom[3].find matched 0 remote objects"
	if got := findChanges(before, after); got != want {
		t.Fatalf("findChanges = %q, want %q", got, want)
	}
	if got := findChanges(nil, after); got != "" {
		t.Fatalf("a first sync: %q, want no event", got)
	}
	if got := findChanges(after, after); got != "" {
		t.Fatalf("unchanged counts: %q, want no event", got)
	}
}
