package conformance

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/watchword-dev/watchword/internal/engine"
)

// readCurrent: a read returns the fields of the secret's current version.
func (s *suite) readCurrent() {
	key := s.key("read-current")
	want := fields("read-current")
	s.seed(key, want)
	obj := s.mustGet(key, "", "after seeding it")
	s.sameFields(key, obj, want, "read after seeding it")
}

// readMissingKey: a key that does not exist is ErrNotFound.
func (s *suite) readMissingKey() {
	key := s.key("read-missing")
	_, err := s.get(key, "")
	s.expectClass(err, engine.ErrNotFound, fmt.Sprintf("reading key %q, which does not exist", key))
}

// readPinnedVersion: a pinned read returns that version; once the secret
// changed, the old version is either still readable (KeepsVersions) or
// ErrNotFound, never the new data under the old version.
func (s *suite) readPinnedVersion() {
	key := s.key("read-pinned")
	first, second := fields("pinned-first"), fields("pinned-second")
	s.seed(key, first)
	obj1 := s.mustGet(key, "", "after seeding it")
	if obj1.Version == "" {
		s.t.Skipf("store %q returns no version with a read: it has no versions to pin", s.h.Name)
	}
	pinned := s.mustGet(key, obj1.Version, "at the version a read just returned")
	s.sameFields(key, pinned, first, fmt.Sprintf("read pinned at version %q", obj1.Version))
	if pinned.Version != obj1.Version {
		s.t.Errorf("store %q: key %q read pinned at version %q: expected the object to carry that version, the store returned version %q", s.h.Name, key, obj1.Version, pinned.Version)
	}
	s.seed(key, second)
	obj2 := s.mustGet(key, "", "after seeding new data")
	s.sameFields(key, obj2, second, "read after seeding new data")
	if obj2.Version == obj1.Version {
		s.t.Fatalf("store %q: key %q: expected a new version after its data was replaced, the store still returns version %q", s.h.Name, key, obj1.Version)
	}
	old, err := s.get(key, obj1.Version)
	if s.h.KeepsVersions {
		if err != nil {
			s.t.Errorf("store %q: key %q: expected replaced version %q to stay readable (the harness says the store keeps versions), the store returned: %v", s.h.Name, key, obj1.Version, err)
			return
		}
		s.sameFields(key, old, first, fmt.Sprintf("read pinned at replaced version %q", obj1.Version))
		return
	}
	s.expectClass(err, engine.ErrNotFound, fmt.Sprintf("reading key %q pinned at replaced version %q (the harness says the store keeps no older versions)", key, obj1.Version))
}

// readMissingVersion: a version that does not exist is ErrNotFound.
func (s *suite) readMissingVersion() {
	key := s.key("read-missing-version")
	s.seed(key, fields("missing-version"))
	if obj := s.mustGet(key, "", "after seeding it"); obj.Version == "" {
		s.t.Skipf("store %q returns no version with a read: it has no versions to pin", s.h.Name)
	}
	_, err := s.get(key, missingVersion)
	s.expectClass(err, engine.ErrNotFound, fmt.Sprintf("reading key %q pinned at version %q, which does not exist", key, missingVersion))
}

// readMissingProperty: properties are selected by the engine from the
// fields a store returns; a field the secret lacks is a PropertyError that
// names the key and the property, and a field it has is its value.
func (s *suite) readMissingProperty() {
	key := s.key("read-property")
	want := fields("property")
	s.seed(key, want)
	obj := s.mustGet(key, "", "after seeding it")
	got, err := engine.Extract(key, obj, "username")
	if err != nil || string(got) != string(want["username"]) {
		s.t.Errorf("store %q: key %q: expected property %q to select the seeded field, the engine returned %s", s.h.Name, key, "username", outcome(err))
	}
	_, err = engine.Extract(key, obj, "no-such-field")
	var pe *engine.PropertyError
	switch {
	case err == nil:
		s.t.Errorf("store %q: key %q: expected property %q, which the secret lacks, to fail, it selected a value", s.h.Name, key, "no-such-field")
	case !errors.As(err, &pe) || pe.Key != key || pe.Property != "no-such-field":
		s.t.Errorf("store %q: key %q: expected a PropertyError naming the key and property %q, got: %v", s.h.Name, key, "no-such-field", err)
	}
}

// currentVersionFollowsSeed: CurrentVersion is the version a read returns,
// and it changes when the data does.
func (s *suite) currentVersionFollowsSeed() {
	key := s.key("version-follows")
	s.seed(key, fields("version-first"))
	v1 := s.mustCurrentVersion(key, "after seeding it")
	if obj := s.mustGet(key, "", "after seeding it"); obj.Version != v1 {
		s.t.Errorf("store %q: key %q: expected CurrentVersion %q to equal the version a read returns, the read returned %q", s.h.Name, key, v1, obj.Version)
	}
	s.seed(key, fields("version-second"))
	v2 := s.mustCurrentVersion(key, "after seeding new data")
	if v2 == v1 {
		s.t.Errorf("store %q: key %q: expected CurrentVersion to change after the data was replaced, it stayed %q", s.h.Name, key, v1)
	}
	if obj := s.mustGet(key, "", "after seeding new data"); obj.Version != v2 {
		s.t.Errorf("store %q: key %q: expected CurrentVersion %q to equal the version a read returns, the read returned %q", s.h.Name, key, v2, obj.Version)
	}
}

// currentVersionMissingKey: the version of a missing key is ErrNotFound.
func (s *suite) currentVersionMissingKey() {
	key := s.key("version-missing")
	_, err := s.currentVersion(key)
	s.expectClass(err, engine.ErrNotFound, fmt.Sprintf("CurrentVersion of key %q, which does not exist", key))
}

func (s *suite) mustCurrentVersion(key, why string) string {
	s.t.Helper()
	v, err := s.currentVersion(key)
	if err != nil {
		s.t.Fatalf("store %q: CurrentVersion of key %q %s: expected it to succeed, the store returned: %v", s.h.Name, key, why, err)
	}
	return v
}

// readOnlyRefusesWrites: a client hands out exactly the capabilities the
// store declares; asking one it lacks is ErrNotSupported.
func (s *suite) readOnlyRefusesWrites() {
	c, err := engine.NewClient(s.h.Name, s.h.Ops)
	if err != nil {
		s.t.Fatalf("store %q: building a client: %v", s.h.Name, err)
	}
	if got, want := c.Capabilities(), s.h.Ops.Capabilities(); got != want {
		s.t.Errorf("store %q: expected the client to have the capabilities the store declares (%s), it has %s", s.h.Name, want, got)
	}
	w, err := c.AsWriter()
	switch {
	case s.h.Ops.Writer == nil:
		s.expectClass(err, engine.ErrNotSupported, "asking a store without a writer for one")
	case err != nil || w == nil:
		s.t.Errorf("store %q declares a writer, but the client refused it: %v", s.h.Name, err)
	}
	if s.h.Ops.Versions == nil {
		_, err = c.AsVersionReader()
		s.expectClass(err, engine.ErrNotSupported, "asking a store without versionCheck for it")
	}
	if s.h.Ops.Batch == nil {
		_, err = c.AsBatchReader()
		s.expectClass(err, engine.ErrNotSupported, "asking a store without batchRead for it")
	}
	if s.h.Ops.Watcher == nil {
		_, err = c.AsWatcher()
		s.expectClass(err, engine.ErrNotSupported, "asking a store without watch for it")
	}
	if s.h.Ops.Lister == nil {
		_, err = c.AsLister()
		s.expectClass(err, engine.ErrNotSupported, "asking a store without list for it")
	}
}

// writeReadBack: what is written is what a read returns, with the version
// the write returned, and a changed write makes a new version.
func (s *suite) writeReadBack() {
	key := s.key("write-read")
	defer s.cleanup(key)
	first, second := fields("write-first"), fields("write-second")
	v1 := s.mustPut(key, first, ownerA, "to a key that does not exist")
	s.expectWritten(key, v1, first, "after the first write")
	v2 := s.mustPut(key, second, ownerA, "with changed fields")
	if v1 != "" && v2 == v1 {
		s.t.Errorf("store %q: key %q: expected a new version after a write that changed its fields, PutSecret returned version %q again", s.h.Name, key, v1)
	}
	s.expectWritten(key, v2, second, "after a write that changed its fields")
}

// unchangedWrite: writing what the secret already holds succeeds and
// changes nothing a read returns. The contract does not promise that the
// version stays (Vault makes a new one, Kubernetes does not write).
func (s *suite) unchangedWrite() {
	key := s.key("write-unchanged")
	defer s.cleanup(key)
	f := fields("unchanged")
	s.mustPut(key, f, ownerA, "to a key that does not exist")
	v := s.mustPut(key, f, ownerA, "with the fields it already holds")
	s.expectWritten(key, v, f, "after writing the fields it already holds")
}

// expectWritten checks a read (and CurrentVersion) after a write that
// returned version.
func (s *suite) expectWritten(key, version string, want map[string][]byte, when string) {
	s.t.Helper()
	obj := s.mustGet(key, "", when)
	s.sameFields(key, obj, want, "read "+when)
	if version != "" && obj.Version != version {
		s.t.Errorf("store %q: key %q %s: expected a read to return the version PutSecret returned (%q), it returned %q", s.h.Name, key, when, version, obj.Version)
	}
	if s.h.Ops.Versions == nil {
		return
	}
	cv, err := s.currentVersion(key)
	switch {
	case err != nil:
		s.t.Errorf("store %q: CurrentVersion of key %q %s: expected it to succeed, the store returned: %v", s.h.Name, key, when, err)
	case cv != obj.Version:
		s.t.Errorf("store %q: key %q %s: expected CurrentVersion to equal the version a read returns (%q), it returned %q", s.h.Name, key, when, obj.Version, cv)
	}
}

// writeRefusesOtherOwner: a secret that carries another owner's marker is
// neither written (even with adopt) nor deleted.
func (s *suite) writeRefusesOtherOwner() {
	key := s.key("owned-by-other")
	defer s.cleanup(key)
	mine := fields("owner-a")
	s.mustPut(key, mine, ownerA, "to a key that does not exist")
	_, err := s.put(key, fields("owner-b"), ownerB)
	s.expectClass(err, engine.ErrNotOwned, fmt.Sprintf("writing key %q, owned by %s, as %s", key, ownerA.ID, ownerB.ID))
	adopter := engine.Owner{ID: ownerB.ID, Adopt: true}
	_, err = s.put(key, fields("owner-b"), adopter)
	s.expectClass(err, engine.ErrNotOwned, fmt.Sprintf("writing key %q, owned by %s, as %s with adopt (adopt takes only unmarked secrets)", key, ownerA.ID, ownerB.ID))
	obj := s.mustGet(key, "", "after another owner's refused writes")
	s.sameFields(key, obj, mine, "read after another owner's refused writes (the owner's data must be intact)")
	err = s.del(key, ownerB)
	s.expectClass(err, engine.ErrNotOwned, fmt.Sprintf("deleting key %q, owned by %s, as %s", key, ownerA.ID, ownerB.ID))
	if _, err = s.get(key, ""); err != nil {
		s.t.Errorf("store %q: reading key %q after another owner's refused delete: expected the owner's secret to remain, the store returned: %v", s.h.Name, key, err)
	}
}

// writeRefusesUnmarked: a secret without a marker (written by someone
// else) is neither written without adopt nor deleted.
func (s *suite) writeRefusesUnmarked() {
	key := s.key("unmarked")
	theirs := fields("unmarked")
	s.seed(key, theirs)
	_, err := s.put(key, fields("owner-a"), ownerA)
	s.expectClass(err, engine.ErrNotOwned, fmt.Sprintf("writing key %q, which carries no ownership marker, as %s without adopt", key, ownerA.ID))
	obj := s.mustGet(key, "", "after a refused write")
	s.sameFields(key, obj, theirs, "read after a refused write (the unmarked data must be intact)")
	err = s.del(key, ownerA)
	s.expectClass(err, engine.ErrNotOwned, fmt.Sprintf("deleting key %q, which carries no ownership marker, as %s", key, ownerA.ID))
	if _, err = s.get(key, ""); err != nil {
		s.t.Errorf("store %q: reading key %q after a refused delete: expected the unmarked secret to remain, the store returned: %v", s.h.Name, key, err)
	}
}

// adoptWhenAsked: with adopt, an unmarked secret is taken over and then
// belongs to its adopter.
func (s *suite) adoptWhenAsked() {
	key := s.key("adopt")
	defer s.cleanup(key)
	s.seed(key, fields("before-adoption"))
	adopted := fields("adopted")
	v := s.mustPut(key, adopted, engine.Owner{ID: ownerA.ID, Adopt: true}, "with adopt, to a key that carries no ownership marker")
	s.expectWritten(key, v, adopted, "after adopting it")
	_, err := s.put(key, fields("owner-b"), ownerB)
	s.expectClass(err, engine.ErrNotOwned, fmt.Sprintf("writing key %q, adopted by %s, as %s", key, ownerA.ID, ownerB.ID))
	again := fields("after-adoption")
	v = s.mustPut(key, again, ownerA, "without adopt, after adopting it")
	s.expectWritten(key, v, again, "after a write by its adopter")
}

// deleteOwned: an owner deletes its secret; deleting a secret that does
// not exist is not an error.
func (s *suite) deleteOwned() {
	key := s.key("delete")
	s.mustPut(key, fields("delete"), ownerA, "to a key that does not exist")
	if err := s.del(key, ownerA); err != nil {
		s.t.Fatalf("store %q: deleting key %q as its owner %s: expected the delete to succeed, the store returned: %v", s.h.Name, key, ownerA.ID, err)
	}
	_, err := s.get(key, "")
	s.expectClass(err, engine.ErrNotFound, fmt.Sprintf("reading key %q after its owner deleted it", key))
	if s.h.Ops.Versions != nil {
		_, err = s.currentVersion(key)
		s.expectClass(err, engine.ErrNotFound, fmt.Sprintf("CurrentVersion of key %q after its owner deleted it", key))
	}
	if err = s.del(key, ownerA); err != nil {
		s.t.Errorf("store %q: deleting key %q again, which no longer exists: expected no error, the store returned: %v", s.h.Name, key, err)
	}
}

// concurrentWriters: two writers of one key, in several rounds (the first
// creates it), end with the fields of one whole write, never a mix; a
// write that loses a race fails with a retryable class or succeeds.
func (s *suite) concurrentWriters() {
	key := s.key("concurrent")
	defer s.cleanup(key)
	const rounds, writers = 4, 2
	type result struct {
		tag     string
		version string
		err     error
	}
	all := map[string]map[string][]byte{} // tag → fields, every write tried
	byVersion := map[string]string{}      // version → tag, of successful writes
	succeeded := 0
	var before string // the tag the key held before the round, "" for none
	for r := range rounds {
		results := make([]result, writers)
		var wg sync.WaitGroup
		for w := range writers {
			tag := fmt.Sprintf("round%d-writer%d", r, w)
			f := fields(tag)
			all[tag] = f
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := s.put(key, f, ownerA)
				results[w] = result{tag: tag, version: v, err: err}
			}()
		}
		wg.Wait()
		for _, res := range results {
			switch {
			case res.err == nil:
				succeeded++
				if res.version != "" {
					if other, dup := byVersion[res.version]; dup && other != res.tag {
						s.t.Errorf("store %q: key %q: two concurrent writes (%s and %s) both returned version %q; expected each successful write to make its own version", s.h.Name, key, other, res.tag, res.version)
					}
					byVersion[res.version] = res.tag
				}
			case !retryable(res.err):
				s.t.Errorf("store %q: key %q: write %s, concurrent with another writer of the same owner: expected success or a retryable error (ErrUnavailable, ErrThrottled), the store returned an error of class %s: %v", s.h.Name, key, res.tag, classOf(res.err), res.err)
			}
		}
		obj, err := s.get(key, "")
		if err != nil {
			if before == "" && errors.Is(err, engine.ErrNotFound) && succeeded == 0 {
				continue
			}
			s.t.Fatalf("store %q: reading key %q after round %d of concurrent writes: expected the read to succeed, the store returned: %v", s.h.Name, key, r, err)
		}
		tag := matchingWrite(obj, all)
		if tag == "" {
			s.t.Fatalf("store %q: key %q after round %d of concurrent writes: expected the fields of exactly one write, the store holds a mix or something else: %s", s.h.Name, key, r, diffFields(obj, all[results[0].tag]))
		}
		if wrote, ok := byVersion[obj.Version]; ok && wrote != tag {
			s.t.Errorf("store %q: key %q: version %q was returned by write %s, but a read of it returns the fields of write %s", s.h.Name, key, obj.Version, wrote, tag)
		}
		if tag != before && !strings.HasPrefix(tag, fmt.Sprintf("round%d-", r)) {
			s.t.Errorf("store %q: key %q after round %d: expected the fields of a write of this round or of the state before it, the store holds those of older write %s", s.h.Name, key, r, tag)
		}
		before = tag
	}
	if succeeded == 0 {
		s.t.Errorf("store %q: key %q: none of %d concurrent writes succeeded; expected at least one per round", s.h.Name, key, rounds*writers)
	}
}

// matchingWrite names the write whose fields obj holds, or "".
func matchingWrite(obj engine.Object, all map[string]map[string][]byte) string {
	for tag, f := range all {
		if diffFields(obj, f) == "" {
			return tag
		}
	}
	return ""
}

// cleanup deletes what a write check wrote, as its owner; a failure is
// not the check's.
func (s *suite) cleanup(key string) {
	_ = s.del(key, ownerA)
}

func outcome(err error) string {
	if err != nil {
		return "an error: " + err.Error()
	}
	return "a different value"
}
