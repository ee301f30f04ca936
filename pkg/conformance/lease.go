package conformance

import (
	"fmt"
	"strings"

	"github.com/watchword-dev/watchword/internal/engine"
)

// The lease checks (a store with the lease capability, and a harness that
// gives a request it grants): what the provider contract says of
// engine.Leaser.

// issue asks for the harness's lease and fails the check if it cannot; the
// lease is revoked when the check ends.
func (s *suite) issue() (engine.Object, engine.Lease) {
	s.t.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	obj, l, err := s.h.Ops.Leaser.Issue(ctx, *s.h.Lease)
	if err != nil {
		s.t.Fatalf("store %q: issuing %s: expected credentials, the store returned: %v", s.h.Name, leaseText(*s.h.Lease), err)
	}
	if l.ID != "" {
		s.revokeLater = append(s.revokeLater, l.ID)
	}
	return obj, l
}

// leaseText names a lease request, for messages.
func leaseText(req engine.LeaseRequest) string {
	if req.Registry != "" {
		return fmt.Sprintf("a %s registry token", req.Registry)
	}
	return fmt.Sprintf("the lease of path %q", req.Path)
}

// leaseIssues: issued credentials have fields, a lease ID and a duration;
// neither the ID nor the version repeats a credential (they go to status,
// events and logs); the harness's LeaseWorks accepts them.
func (s *suite) leaseIssues() {
	obj, l := s.issue()
	what := leaseText(*s.h.Lease)
	if len(obj.Fields) == 0 {
		s.t.Errorf("store %q: %s: expected credentials in the object's fields, the store returned none", s.h.Name, what)
	}
	if l.ID == "" || l.Duration <= 0 {
		s.t.Errorf("store %q: %s: expected a lease ID and a positive duration, the store returned ID %q and duration %s", s.h.Name, what, l.ID, l.Duration)
	}
	for name, v := range obj.Fields {
		if len(v) < 4 {
			continue
		}
		if strings.Contains(l.ID, string(v)) || strings.Contains(obj.Version, string(v)) {
			s.t.Errorf("store %q: %s: the lease ID or the version repeats the value of field %q; they are recorded in status and logs", s.h.Name, what, name)
		}
	}
	if s.h.LeaseWorks != nil {
		ctx, cancel := s.ctx()
		defer cancel()
		if err := s.h.LeaseWorks(ctx, obj); err != nil {
			s.t.Errorf("store %q: %s: the issued credentials do not work: %v", s.h.Name, what, err)
		}
	}
}

// leaseRenews: a renewable lease is renewed, keeping a positive duration;
// one that is not renewable refuses with ErrNotFound, as a lease that is
// gone does, so that the controller asks for new credentials.
func (s *suite) leaseRenews() {
	_, l := s.issue()
	ctx, cancel := s.ctx()
	defer cancel()
	renewed, err := s.h.Ops.Leaser.Renew(ctx, l.ID, l.Duration)
	what := leaseText(*s.h.Lease)
	if !l.Renewable {
		s.expectClass(err, engine.ErrNotFound, fmt.Sprintf("renewing %s, which the store issued as not renewable", what))
		return
	}
	if err != nil {
		s.t.Fatalf("store %q: renewing %s: expected the renewal to succeed, the store returned: %v", s.h.Name, what, err)
	}
	if renewed.Duration <= 0 {
		s.t.Errorf("store %q: renewing %s: expected a positive duration, the store returned %s", s.h.Name, what, renewed.Duration)
	}
}

// leaseRevokesOnce: a revoked lease can be revoked again without an error
// (the controller revokes again after a crash); a renewable lease, once
// revoked, refuses renewal with ErrNotFound.
func (s *suite) leaseRevokesOnce() {
	_, l := s.issue()
	what := leaseText(*s.h.Lease)
	for i := range 2 {
		ctx, cancel := s.ctx()
		err := s.h.Ops.Leaser.Revoke(ctx, l.ID)
		cancel()
		if err != nil {
			s.t.Fatalf("store %q: revoking %s (time %d): expected no error, the store returned: %v", s.h.Name, what, i+1, err)
		}
	}
	if l.Renewable {
		ctx, cancel := s.ctx()
		defer cancel()
		_, err := s.h.Ops.Leaser.Renew(ctx, l.ID, l.Duration)
		s.expectClass(err, engine.ErrNotFound, fmt.Sprintf("renewing %s after revoking it", what))
	}
}

// revokeIssued revokes the leases the check issued, however it ended.
func (s *suite) revokeIssued() {
	for _, id := range s.revokeLater {
		ctx, cancel := s.ctx()
		_ = s.h.Ops.Leaser.Revoke(ctx, id)
		cancel()
	}
}
