package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/watchword-dev/watchword/internal/engine"
)

// memStore is an in-memory store that keeps every version, with flaws
// that the tests switch on to check that the suite catches them.
type memStore struct {
	mu      sync.Mutex
	secrets map[string]*memSecret
	flaws   flaws
}

type flaws struct {
	missingIsPlainError bool // a missing key is an error of no class
	writesOverForeign   bool // PutSecret ignores the ownership marker
	deletesForeign      bool // DeleteSecret ignores the ownership marker
	pinIgnored          bool // a pinned read returns the current version
	staleWriteVersion   bool // PutSecret returns the version it replaced
	listIgnoresLimit    bool // List returns every key in one page
	listSkipsPageEdge   bool // List loses the first key of every page after the first
	listStaleVersion    bool // List gives each key's first version
}

type memSecret struct {
	owner    string // "" when unmarked
	versions []map[string][]byte
}

func newMemStore(f flaws) *memStore { return &memStore{secrets: map[string]*memSecret{}, flaws: f} }

func (m *memStore) notFound(key string) error {
	if m.flaws.missingIsPlainError {
		return fmt.Errorf("no such key %q", key)
	}
	return fmt.Errorf("key %q does not exist: %w", key, engine.ErrNotFound)
}

func (m *memStore) GetSecret(_ context.Context, ref engine.Ref) (engine.Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.secrets[ref.Key]
	if !ok {
		return engine.Object{}, m.notFound(ref.Key)
	}
	n := len(s.versions)
	if ref.Version != "" && !m.flaws.pinIgnored {
		var err error
		if n, err = strconv.Atoi(ref.Version); err != nil || n < 1 || n > len(s.versions) {
			return engine.Object{}, fmt.Errorf("key %q has no version %q: %w", ref.Key, ref.Version, engine.ErrNotFound)
		}
	}
	return engine.Object{Version: strconv.Itoa(n), Fields: maps.Clone(s.versions[n-1])}, nil
}

func (m *memStore) CurrentVersion(_ context.Context, key string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.secrets[key]
	if !ok {
		return "", m.notFound(key)
	}
	return strconv.Itoa(len(s.versions)), nil
}

func (m *memStore) PutSecret(_ context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.secrets[key]
	if !ok {
		s = &memSecret{}
		m.secrets[key] = s
	} else if !m.flaws.writesOverForeign && s.owner != owner.ID && (s.owner != "" || !owner.Adopt) {
		return "", fmt.Errorf("key %q is not owned by %s: %w", key, owner.ID, engine.ErrNotOwned)
	}
	s.owner = owner.ID
	s.versions = append(s.versions, maps.Clone(p.Fields))
	n := len(s.versions)
	if m.flaws.staleWriteVersion {
		n--
	}
	return strconv.Itoa(n), nil
}

func (m *memStore) DeleteSecret(_ context.Context, key string, owner engine.Owner) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.secrets[key]
	if !ok {
		return nil
	}
	if !m.flaws.deletesForeign && s.owner != owner.ID {
		return fmt.Errorf("key %q is not owned by %s: %w", key, owner.ID, engine.ErrNotOwned)
	}
	delete(m.secrets, key)
	return nil
}

// List lists the sorted keys under a prefix, a page at a time.
func (m *memStore) List(_ context.Context, req engine.ListRequest) (engine.ListPage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(m.secrets)) {
		if strings.HasPrefix(k, req.Prefix) {
			keys = append(keys, k)
		}
	}
	limit := req.Limit
	if m.flaws.listIgnoresLimit {
		limit = 0
	}
	page, next := engine.PageAfter(keys, req.PageToken, limit)
	if m.flaws.listSkipsPageEdge && req.PageToken != "" && len(page) > 0 {
		page = page[1:]
	}
	out := engine.ListPage{NextPageToken: next}
	for _, k := range page {
		v := len(m.secrets[k].versions)
		if m.flaws.listStaleVersion {
			v = 1
		}
		out.Items = append(out.Items, engine.ListItem{Key: k, Version: strconv.Itoa(v)})
	}
	return out, nil
}

// seed writes without a marker, as someone else would.
func (m *memStore) seed(_ context.Context, key string, fields map[string][]byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.secrets[key]
	if !ok {
		s = &memSecret{}
		m.secrets[key] = s
	}
	s.owner = ""
	s.versions = append(s.versions, maps.Clone(fields))
	return nil
}

func (m *memStore) harness() Harness {
	return Harness{Name: "memory", Ops: engine.Ops{Reader: m, Versions: m, Writer: m, Lister: m}, Seed: m.seed, KeepsVersions: true}
}

func TestAConformingStorePasses(t *testing.T) {
	Run(t, newMemStore(flaws{}).harness())
}

func TestAReadOnlyStorePassesTheReadChecks(t *testing.T) {
	m := newMemStore(flaws{})
	h := m.harness()
	h.Ops = engine.Ops{Reader: m}
	Run(t, h)
	rec := runRecorded(t, h)
	for _, name := range []string{"WriteReadBack", "ConcurrentWriters", "CurrentVersionFollowsSeed", "ListAgreesWithReads", "ListPages"} {
		if !rec.skipped[name] {
			t.Errorf("check %s ran against a store that does not declare its capability", name)
		}
	}
}

// recorder collects failures and skips instead of reporting them, and
// stops a check at Fatalf or Skipf as testing.T does.
type recorder struct {
	testing.TB
	check    string
	mu       *sync.Mutex
	failures *[]string
	skipped  map[string]bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.failures = append(*r.failures, r.check+": "+fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(string, ...any) {
	r.mu.Lock()
	r.skipped[r.check] = true
	r.mu.Unlock()
	runtime.Goexit()
}

type recording struct {
	failures []string
	skipped  map[string]bool
}

// runRecorded runs every check of the suite against h, as Run does, and
// returns what they reported.
func runRecorded(t *testing.T, h Harness) recording {
	out := recording{skipped: map[string]bool{}}
	var mu sync.Mutex
	for _, c := range checks {
		if skipReason(c, h) != "" {
			out.skipped[c.name] = true
			continue
		}
		rec := &recorder{TB: t, check: c.name, mu: &mu, failures: &out.failures, skipped: out.skipped}
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.fn(&suite{t: rec, h: h})
		}()
		<-done
	}
	return out
}

// TestFlawedStoresFail runs the suite against stores that break the
// contract in one way each, and checks that the suite fails them with a
// message that names the problem.
func TestFlawedStoresFail(t *testing.T) {
	cases := []struct {
		name  string
		flaws flaws
		want  []string // each must appear in one failure message
	}{
		{
			name:  "missing key of no class",
			flaws: flaws{missingIsPlainError: true},
			want: []string{
				`ReadMissingKey: store "memory": reading key "read-missing", which does not exist: expected an error wrapping ErrNotFound, the store returned an error of class none`,
				`CurrentVersionMissingKey: store "memory": CurrentVersion of key "version-missing", which does not exist: expected an error wrapping ErrNotFound`,
				`DeleteOwned: store "memory": reading key "delete" after its owner deleted it: expected an error wrapping ErrNotFound`,
			},
		},
		{
			name:  "writes over secrets it does not own",
			flaws: flaws{writesOverForeign: true},
			want: []string{
				`WriteRefusesUnmarked: store "memory": writing key "unmarked", which carries no ownership marker, as PushSecret/conformance/owner-a without adopt: expected an error wrapping ErrNotOwned, the store returned no error`,
				`WriteRefusesUnmarked: store "memory": key "unmarked" read after a refused write (the unmarked data must be intact): expected fields [password, username], fields whose value differs from what was written: [password, username]`,
				`WriteRefusesOtherOwner: store "memory": writing key "owned-by-other", owned by PushSecret/conformance/owner-a, as PushSecret/conformance/owner-b: expected an error wrapping ErrNotOwned`,
				`AdoptWhenAsked: store "memory": writing key "adopt", adopted by PushSecret/conformance/owner-a, as PushSecret/conformance/owner-b: expected an error wrapping ErrNotOwned`,
			},
		},
		{
			name:  "deletes secrets it does not own",
			flaws: flaws{deletesForeign: true},
			want: []string{
				`WriteRefusesOtherOwner: store "memory": deleting key "owned-by-other", owned by PushSecret/conformance/owner-a, as PushSecret/conformance/owner-b: expected an error wrapping ErrNotOwned, the store returned no error`,
				`WriteRefusesUnmarked: store "memory": deleting key "unmarked", which carries no ownership marker, as PushSecret/conformance/owner-a: expected an error wrapping ErrNotOwned`,
				`WriteRefusesUnmarked: store "memory": reading key "unmarked" after a refused delete: expected the unmarked secret to remain, the store returned: key "unmarked" does not exist`,
			},
		},
		{
			name:  "ignores pinned versions",
			flaws: flaws{pinIgnored: true},
			want: []string{
				`ReadMissingVersion: store "memory": reading key "read-missing-version" pinned at version "987654321", which does not exist: expected an error wrapping ErrNotFound, the store returned no error`,
				`ReadPinnedVersion: store "memory": key "read-pinned" read pinned at replaced version "1": expected fields [password, username], fields whose value differs from what was written: [password, username]`,
			},
		},
		{
			name:  "returns a stale version from writes",
			flaws: flaws{staleWriteVersion: true},
			want: []string{
				`WriteReadBack: store "memory": key "write-read" after the first write: expected a read to return the version PutSecret returned ("0"), it returned "1"`,
			},
		},
		{
			name:  "ignores the page limit",
			flaws: flaws{listIgnoresLimit: true},
			want: []string{
				`ListPages: store "memory": listing the keys under "list-page-" two at a time (page 1): expected at most 2 items (the limit), the store returned 5`,
			},
		},
		{
			name:  "loses a key between pages",
			flaws: flaws{listSkipsPageEdge: true},
			want: []string{
				`ListPages: store "memory": listing the keys under "list-page-" two at a time, over every page: expected keys [list-page-0, list-page-1, list-page-2, list-page-3, list-page-4], keys missing: [list-page-2, list-page-4]`,
			},
		},
		{
			name:  "lists a stale version",
			flaws: flaws{listStaleVersion: true},
			want: []string{
				`ListAgreesWithReads: store "memory": key "list-agree-a": expected the listed version "1" to be the version a read returns`,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := runRecorded(t, newMemStore(tc.flaws).harness())
			if len(rec.failures) == 0 {
				t.Fatal("the suite passed a store that breaks the contract")
			}
			for _, want := range tc.want {
				if !containsPrefix(rec.failures, want) {
					t.Errorf("no failure says %q; the failures:\n%s", want, strings.Join(rec.failures, "\n"))
				}
			}
			for _, f := range rec.failures {
				if strings.Contains(f, "user-") || strings.Contains(f, "pw-") {
					t.Errorf("a failure message shows a secret value: %s", f)
				}
			}
		})
	}
}

func containsPrefix(msgs []string, want string) bool {
	for _, m := range msgs {
		if strings.Contains(m, want) {
			return true
		}
	}
	return false
}

// TestClassNamesEveryContractClass: messages name the class a store's
// error wraps.
func TestClassNamesEveryContractClass(t *testing.T) {
	for _, c := range classes {
		if got := classOf(fmt.Errorf("x: %w", c.err)); got != c.name {
			t.Errorf("classOf(%v) = %s, want %s", c.err, got, c.name)
		}
	}
	if got := classOf(errors.New("plain")); !strings.HasPrefix(got, "none") {
		t.Errorf("classOf(plain error) = %s", got)
	}
}

// unseed deletes a seeded secret, whoever marked it.
func (m *memStore) unseed(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.secrets, key)
	return nil
}

func (m *memStore) keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.secrets))
}

// TestARunLeavesNothingBehind: with Unseed, what the read checks seeded
// is deleted when each check ends, whether it passed, failed or was
// skipped half way; the write checks delete what they wrote.
func TestARunLeavesNothingBehind(t *testing.T) {
	for _, f := range []flaws{{}, {pinIgnored: true}} {
		m := newMemStore(f)
		h := m.harness()
		h.Unseed = m.unseed
		if _, err := Check(h, nil); err != nil {
			t.Fatal(err)
		}
		if left := m.keys(); len(left) > 0 {
			t.Errorf("flaws %+v: the run left %q behind", f, left)
		}
	}
}
