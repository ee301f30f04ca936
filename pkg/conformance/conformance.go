// Package conformance is the one test suite that every secret store passes:
// the in-tree providers and the out-of-tree plugins alike. It checks, against
// the operations a provider built for a store (engine.Ops), what the
// provider contract (docs/provider-contract.md) promises, and only for the
// capabilities the store declares:
//
//   - reads: the current value, a pinned version, and the ErrNotFound class
//     for a missing key or version;
//   - versions (versionCheck): CurrentVersion agrees with reads and writes;
//   - writes (write, delete): what is written is read back, the ownership
//     marker protects other owners' and unmarked secrets, adoption happens
//     only when asked, and concurrent writers leave one consistent value;
//   - batch reads (batchRead): equal to single reads, ref by ref;
//   - watches (watch): a write is announced by its key within a bound;
//   - listings (list): the keys listed under a prefix are those seeded
//     there, read back by their listed keys with the listed versions,
//     across pages of a small limit, with odd characters in names;
//   - leases (lease, with a request the harness gives): issued credentials
//     come with a lease ID and a duration that repeat no credential, a
//     renewable lease renews and any other refuses with ErrNotFound, and a
//     revoked lease can be revoked again;
//   - honesty: a store without a writer refuses writes with ErrNotSupported,
//     and one without batchRead, watch or list has none of them.
//
// A store's tests call Run with a Harness:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Harness{
//			Name: "mystore",
//			Ops:  ops,
//			Seed: seedOutOfBand,
//			Key:  func(name string) string { return prefix + name },
//		})
//	}
//
// Messages name keys, fields and versions, never a value.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
)

// Harness is what a store gives the suite.
type Harness struct {
	// Name of the store, in messages.
	Name string
	// Ops are the operations of a client of the store, as its provider
	// built them. Their non-nil fields are the capabilities checked.
	Ops engine.Ops
	// Seed writes a remote secret out of band, as someone other than
	// Watchword would: with these fields and without any ownership
	// marker, creating it or replacing its data (a new version where the
	// store keeps versions). The read checks use it to create what they
	// read, and the write checks to create secrets that Watchword does
	// not own. Without Seed, those checks are skipped.
	Seed func(ctx context.Context, key string, fields map[string][]byte) error
	// Unseed deletes a secret that Seed wrote, once the check that
	// seeded it has ended (passed, failed or skipped), so that a run
	// leaves nothing behind; a secret that no longer exists is no error,
	// and an error is not the check's. Nil leaves seeded secrets in place.
	Unseed func(ctx context.Context, key string) error
	// Key turns a name the suite uses (lower-case letters, digits and
	// '-', such as "read-current") into a key of the store that holds
	// nothing yet, such as a path under a prefix unique to the run. Nil
	// uses the names as they are.
	Key func(name string) string
	// KeepsVersions tells that the store keeps older versions readable
	// (Vault KV v2). Otherwise a pinned read of a replaced version must
	// fail with ErrNotFound (a Kubernetes Secret keeps only its current
	// resourceVersion).
	KeepsVersions bool
	// Timeout bounds each call of the store; zero means engine.CallTimeout.
	Timeout time.Duration
	// SeedMarks tells that Seed leaves an ownership marker (of an owner
	// the suite does not act as), as a Seed through the store's own
	// writer does: the checks of unmarked secrets are skipped.
	SeedMarks bool
	// SkipWrites, when not empty, skips the checks that write or delete,
	// with this reason (a run against a store that must not be written).
	SkipWrites string
	// WatchTimeout bounds how long a change takes to be announced by a
	// store that watches; zero means 10 seconds.
	WatchTimeout time.Duration
	// Lease is a request the store grants (a dataFrom vaultDynamic path,
	// or a registryToken), for the lease checks of a store with the lease
	// capability. Nil skips them.
	Lease *engine.LeaseRequest
	// LeaseWorks, when set, tells whether credentials the store issued
	// for Lease work (a login with them, a call the token allows).
	LeaseWorks func(ctx context.Context, obj engine.Object) error
}

// The owners the write checks act as.
var (
	ownerA = engine.Owner{ID: "PushSecret/conformance/owner-a"}
	ownerB = engine.Owner{ID: "PushSecret/conformance/owner-b"}
)

// missingVersion is a version no check creates.
const missingVersion = "987654321"

// check is one named check of the suite.
type check struct {
	name string
	// needs are the capabilities without which the check is skipped.
	needs engine.Capabilities
	// seeds tells that the check needs Harness.Seed; unmarked, that it
	// needs a Seed that leaves no ownership marker.
	seeds, unmarked bool
	// leases tells that the check needs Harness.Lease.
	leases bool
	fn     func(s *suite)
}

var checks = unseeding([]check{
	{name: "ReadCurrent", needs: engine.CanRead, seeds: true, fn: (*suite).readCurrent},
	{name: "ReadMissingKey", needs: engine.CanRead, fn: (*suite).readMissingKey},
	{name: "ReadPinnedVersion", needs: engine.CanRead, seeds: true, fn: (*suite).readPinnedVersion},
	{name: "ReadMissingVersion", needs: engine.CanRead, seeds: true, fn: (*suite).readMissingVersion},
	{name: "ReadMissingProperty", needs: engine.CanRead, seeds: true, fn: (*suite).readMissingProperty},
	{name: "CurrentVersionFollowsSeed", needs: engine.CanCheckVersion, seeds: true, fn: (*suite).currentVersionFollowsSeed},
	{name: "CurrentVersionMissingKey", needs: engine.CanCheckVersion, fn: (*suite).currentVersionMissingKey},
	{name: "ReadOnlyRefusesWrites", fn: (*suite).readOnlyRefusesWrites},
	{name: "WriteReadBack", needs: engine.CanWrite, fn: (*suite).writeReadBack},
	{name: "UnchangedWrite", needs: engine.CanWrite, fn: (*suite).unchangedWrite},
	{name: "WriteRefusesOtherOwner", needs: engine.CanWrite, fn: (*suite).writeRefusesOtherOwner},
	{name: "WriteRefusesUnmarked", needs: engine.CanWrite, seeds: true, unmarked: true, fn: (*suite).writeRefusesUnmarked},
	{name: "AdoptWhenAsked", needs: engine.CanWrite, seeds: true, unmarked: true, fn: (*suite).adoptWhenAsked},
	{name: "DeleteOwned", needs: engine.CanDelete, fn: (*suite).deleteOwned},
	{name: "ConcurrentWriters", needs: engine.CanWrite, fn: (*suite).concurrentWriters},
	{name: "BatchReadsEqualSingleReads", needs: engine.CanBatchRead, seeds: true, fn: (*suite).batchReadsEqualSingleReads},
	{name: "WatchAnnouncesWrites", needs: engine.CanWatch, fn: (*suite).watchAnnouncesWrites},
	{name: "ListAgreesWithReads", needs: engine.CanList, seeds: true, fn: (*suite).listAgreesWithReads},
	{name: "ListPages", needs: engine.CanList, seeds: true, fn: (*suite).listPages},
	{name: "ListOddNames", needs: engine.CanList, seeds: true, fn: (*suite).listOddNames},
	{name: "ListEmptyPrefix", needs: engine.CanList, fn: (*suite).listEmptyPrefix},
	{name: "LeaseIssues", needs: engine.CanLease, leases: true, fn: (*suite).leaseIssues},
	{name: "LeaseRenews", needs: engine.CanLease, leases: true, fn: (*suite).leaseRenews},
	{name: "LeaseRevokesOnce", needs: engine.CanLease, leases: true, fn: (*suite).leaseRevokesOnce},
})

// unseeding makes each check delete what it seeded when it ends, however
// it ends (a fatal problem or a skip ends a check's goroutine, and runs
// its deferred calls).
func unseeding(cs []check) []check {
	for i := range cs {
		fn := cs[i].fn
		cs[i].fn = func(s *suite) {
			defer s.unseed()
			defer s.revokeIssued()
			fn(s)
		}
	}
	return cs
}

// TB is what Run needs of a test: *testing.T satisfies it. Run is generic
// over it so that this package does not import the testing package, which
// would then be linked into every program that imports it, such as the
// operator's binary through `watchword conformance`.
type TB[T any] interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Run(name string, f func(T)) bool
}

// Run runs every check that applies to the store, each as a subtest:
// conformance.Run(t, h) in a test.
func Run[T TB[T]](t T, h Harness) {
	t.Helper()
	if h.Ops.Reader == nil {
		t.Fatalf("store %q: the harness gives no Reader; every store can read", h.Name)
	}
	for _, c := range checks {
		t.Run(c.name, func(t T) {
			if why := skipReason(c, h); why != "" {
				t.Skipf("%s", why)
			}
			c.fn(&suite{t: t, h: h})
		})
	}
}

// skipReason says why check c does not apply to the store, or "".
func skipReason(c check, h Harness) string {
	if caps := h.Ops.Capabilities(); !caps.Has(c.needs) {
		return fmt.Sprintf("store %q has capabilities %s, the check needs %s", h.Name, caps, c.needs)
	}
	if c.needs&(engine.CanWrite|engine.CanDelete) != 0 && h.SkipWrites != "" {
		return fmt.Sprintf("store %q: %s", h.Name, h.SkipWrites)
	}
	if c.unmarked && h.SeedMarks {
		return fmt.Sprintf("store %q: the harness seeds through the store's writer, which leaves an ownership marker; the check needs a secret without one", h.Name)
	}
	if c.seeds && h.Seed == nil {
		return fmt.Sprintf("store %q: the harness gives no Seed to create remote secrets out of band", h.Name)
	}
	if c.leases && h.Lease == nil {
		return fmt.Sprintf("store %q: the harness gives no lease request to issue", h.Name)
	}
	return ""
}

// reporter is what a check reports through: the test in Run, a
// recorder in Check. Fatalf and Skipf end the check.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// suite is one check's view of the store.
type suite struct {
	t reporter
	h Harness
	// seeded are the keys the check seeded, in order, each once.
	seeded []string
	// revokeLater are the leases the check issued, revoked when it ends.
	revokeLater []string
}

func (s *suite) ctx() (context.Context, context.CancelFunc) {
	d := s.h.Timeout
	if d <= 0 {
		d = engine.CallTimeout
	}
	return context.WithTimeout(context.Background(), d)
}

func (s *suite) key(name string) string {
	if s.h.Key == nil {
		return name
	}
	return s.h.Key(name)
}

// seed writes fields out of band and fails the check if it cannot.
func (s *suite) seed(key string, fields map[string][]byte) {
	s.t.Helper()
	if err := s.seedErr(key, fields); err != nil {
		s.t.Fatalf("store %q: the harness could not seed key %q: %v", s.h.Name, key, err)
	}
}

// seedErr writes fields out of band, and remembers the key for unseed.
func (s *suite) seedErr(key string, fields map[string][]byte) error {
	if !slices.Contains(s.seeded, key) {
		s.seeded = append(s.seeded, key)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	return s.h.Seed(ctx, key, fields)
}

// unseed deletes what the check seeded, with the harness's Unseed.
func (s *suite) unseed() {
	if s.h.Unseed == nil {
		return
	}
	for _, key := range s.seeded {
		ctx, cancel := s.ctx()
		_ = s.h.Unseed(ctx, key)
		cancel()
	}
}

func (s *suite) get(key, version string) (engine.Object, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.h.Ops.Reader.GetSecret(ctx, engine.Ref{Key: key, Version: version})
}

// mustGet reads a key and fails the check if the read fails.
func (s *suite) mustGet(key, version, why string) engine.Object {
	s.t.Helper()
	obj, err := s.get(key, version)
	if err != nil {
		s.t.Fatalf("store %q: reading key %q%s %s: expected the read to succeed, the store returned: %v", s.h.Name, key, versionText(version), why, err)
	}
	return obj
}

func (s *suite) put(key string, fields map[string][]byte, owner engine.Owner) (string, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.h.Ops.Writer.PutSecret(ctx, key, engine.Publication{Fields: fields}, owner)
}

func (s *suite) mustPut(key string, fields map[string][]byte, owner engine.Owner, why string) string {
	s.t.Helper()
	v, err := s.put(key, fields, owner)
	if err != nil {
		s.t.Fatalf("store %q: writing key %q as %s %s: expected the write to succeed, the store returned: %v", s.h.Name, key, owner.ID, why, err)
	}
	return v
}

func (s *suite) del(key string, owner engine.Owner) error {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.h.Ops.Writer.DeleteSecret(ctx, key, owner)
}

func (s *suite) currentVersion(key string) (string, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.h.Ops.Versions.CurrentVersion(ctx, key)
}

// expectClass fails the check unless err wraps class.
func (s *suite) expectClass(err, class error, what string) {
	s.t.Helper()
	switch {
	case err == nil:
		s.t.Errorf("store %q: %s: expected an error wrapping %s, the store returned no error", s.h.Name, what, className(class))
	case !errors.Is(err, class):
		s.t.Errorf("store %q: %s: expected an error wrapping %s, the store returned an error of class %s: %v", s.h.Name, what, className(class), classOf(err), err)
	}
}

// sameFields fails the check unless got holds exactly the fields of want,
// with equal values. It names the fields that differ, never a value.
func (s *suite) sameFields(key string, got engine.Object, want map[string][]byte, what string) bool {
	s.t.Helper()
	if problem := diffFields(got, want); problem != "" {
		s.t.Errorf("store %q: key %q %s: %s", s.h.Name, key, what, problem)
		return false
	}
	return true
}

func diffFields(got engine.Object, want map[string][]byte) string {
	if got.Fields == nil && got.Value != nil {
		return fmt.Sprintf("expected fields %s, the store returned a single value instead of fields", fieldNames(want))
	}
	var missing, extra, differ []string
	for k, v := range want {
		g, ok := got.Fields[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case string(g) != string(v):
			differ = append(differ, k)
		}
	}
	for k := range got.Fields {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	var out []string
	if len(missing) > 0 {
		out = append(out, "fields missing: "+list(missing))
	}
	if len(extra) > 0 {
		out = append(out, "unexpected fields: "+list(extra))
	}
	if len(differ) > 0 {
		out = append(out, "fields whose value differs from what was written: "+list(differ))
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprintf("expected fields %s, %s", fieldNames(want), strings.Join(out, "; "))
}

func fieldNames(m map[string][]byte) string { return list(slices.Collect(maps.Keys(m))) }

func list(names []string) string {
	slices.Sort(names)
	return "[" + strings.Join(names, ", ") + "]"
}

func versionText(version string) string {
	if version == "" {
		return ""
	}
	return fmt.Sprintf(" at version %q", version)
}

// fields makes a set of fields whose values are distinct per tag: the
// suite compares them and never prints them.
func fields(tag string) map[string][]byte {
	return map[string][]byte{
		"username": []byte("user-" + tag),
		"password": []byte("pw-" + tag + "-" + strings.Repeat("x", len(tag))),
	}
}

// classes are the error classes of the contract, for messages.
var classes = []struct {
	err  error
	name string
}{
	{engine.ErrNotFound, "ErrNotFound"},
	{engine.ErrPermissionDenied, "ErrPermissionDenied"},
	{engine.ErrUnavailable, "ErrUnavailable"},
	{engine.ErrThrottled, "ErrThrottled"},
	{engine.ErrInvalidConfig, "ErrInvalidConfig"},
	{engine.ErrNotSupported, "ErrNotSupported"},
	{engine.ErrNotOwned, "ErrNotOwned"},
	{engine.ErrNotImplemented, "ErrNotImplemented"},
}

func className(class error) string {
	for _, c := range classes {
		if errors.Is(class, c.err) {
			return c.name
		}
	}
	return "an unknown class"
}

// classOf names the contract class err wraps, or "none".
func classOf(err error) string {
	for _, c := range classes {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "none (it wraps no class of the contract)"
}

// retryable tells whether a failed write may be retried: a conflict with
// a concurrent writer is reported as ErrUnavailable (or ErrThrottled).
func retryable(err error) bool {
	return errors.Is(err, engine.ErrUnavailable) || errors.Is(err, engine.ErrThrottled)
}
