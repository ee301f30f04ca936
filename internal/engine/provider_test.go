package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/internal/failure"
)

type stubOps struct{ name string }

func (s stubOps) GetSecret(context.Context, Ref) (Object, error) { return Object{Version: s.name}, nil }
func (s stubOps) CurrentVersion(context.Context, string) (string, error) {
	return s.name, nil
}
func (s stubOps) PutSecret(context.Context, string, Publication, Owner) (string, error) {
	return "", nil
}
func (s stubOps) DeleteSecret(context.Context, string, Owner) error { return nil }
func (s stubOps) Check(context.Context) error                       { return nil }
func (s stubOps) Close() error                                      { return nil }
func (s stubOps) GetSecrets(_ context.Context, refs []Ref) ([]BatchItem, error) {
	return make([]BatchItem, len(refs)), nil
}
func (s stubOps) List(context.Context, ListRequest) (ListPage, error) {
	return ListPage{Items: []ListItem{{Key: s.name}}}, nil
}
func (s stubOps) Watch(ctx context.Context, _ func([]string)) error { <-ctx.Done(); return ctx.Err() }

func TestCapabilitiesString(t *testing.T) {
	for _, tc := range []struct {
		c    Capabilities
		want string
	}{
		{0, "none"},
		{CanRead, "read"},
		{CanRead | CanCheckVersion | CanWrite | CanDelete, "read,versionCheck,write,delete"},
		{CanRead | CanBatchRead | CanCheckVersion | CanList | CanWrite | CanDelete | CanWatch, "read,batchRead,versionCheck,list,write,delete,watch"},
		{CanRead | CanLease, "read,lease"},
		{CanRead | CanFetchMetadata, "read,fetchMetadata"},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%d: got %q, want %q", tc.c, got, tc.want)
		}
	}
}

func TestClientDeclaresWhatItsOpsHave(t *testing.T) {
	s := stubOps{}
	for _, tc := range []struct {
		name string
		ops  Ops
		want Capabilities
	}{
		{"read only", Ops{Reader: s}, CanRead},
		{"versions", Ops{Reader: s, Versions: s}, CanRead | CanCheckVersion},
		{"writer", Ops{Reader: s, Writer: s}, CanRead | CanWrite | CanDelete},
		{"check and close add no capability", Ops{Reader: s, Checker: s, Closer: s}, CanRead},
		{"batch", Ops{Reader: s, Batch: s}, CanRead | CanBatchRead},
		{"watch", Ops{Reader: s, Watcher: s}, CanRead | CanWatch},
		{"list", Ops{Reader: s, Lister: s}, CanRead | CanList},
		{"everything", Ops{Reader: s, Batch: s, Versions: s, Lister: s, Writer: s, Watcher: s}, CanRead | CanBatchRead | CanCheckVersion | CanList | CanWrite | CanDelete | CanWatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClient("p", tc.ops)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Capabilities(); got != tc.want {
				t.Fatalf("capabilities %s, want %s", got, tc.want)
			}
			_, verr := c.AsVersionReader()
			if (verr == nil) != c.Capabilities().Has(CanCheckVersion) {
				t.Fatalf("AsVersionReader error %v disagrees with capabilities %s", verr, c.Capabilities())
			}
			_, werr := c.AsWriter()
			if (werr == nil) != c.Capabilities().Has(CanWrite) {
				t.Fatalf("AsWriter error %v disagrees with capabilities %s", werr, c.Capabilities())
			}
			if got := tc.ops.Capabilities(); got != tc.want {
				t.Fatalf("Ops.Capabilities %s, want %s", got, tc.want)
			}
			_, berr := c.AsBatchReader()
			if (berr == nil) != c.Capabilities().Has(CanBatchRead) || (berr != nil && !errors.Is(berr, ErrNotSupported)) {
				t.Fatalf("AsBatchReader error %v disagrees with capabilities %s", berr, c.Capabilities())
			}
			_, lerr := c.AsLister()
			if (lerr == nil) != c.Capabilities().Has(CanList) || (lerr != nil && !errors.Is(lerr, ErrNotSupported)) {
				t.Fatalf("AsLister error %v disagrees with capabilities %s", lerr, c.Capabilities())
			}
			_, wcerr := c.AsWatcher()
			if (wcerr == nil) != c.Capabilities().Has(CanWatch) || (wcerr != nil && !errors.Is(wcerr, ErrNotSupported)) {
				t.Fatalf("AsWatcher error %v disagrees with capabilities %s", wcerr, c.Capabilities())
			}
		})
	}
}

func TestMissingCapabilityNamesProviderAndCapability(t *testing.T) {
	c, _ := NewClient("kubernetes", Ops{Reader: stubOps{}})
	_, err := c.AsWriter()
	if !errors.Is(err, ErrNotSupported) {
		t.Fatalf("got %v, want ErrNotSupported", err)
	}
	for _, want := range []string{`"kubernetes"`, "write"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	// A publisher asking a read-only store to write is told so once: the
	// error model makes it terminal, with its own reason.
	if class := failure.Classify(err); class.Reason != failure.NotSupported || !class.Terminal {
		t.Errorf("a missing capability is classed %+v, want a terminal NotSupported", class)
	}
	_, err = c.AsVersionReader()
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "versionCheck") {
		t.Fatalf("got %v, want ErrNotSupported naming versionCheck", err)
	}
}

func TestClientNeedsAReader(t *testing.T) {
	if _, err := NewClient("p", Ops{Writer: stubOps{}}); err == nil {
		t.Fatal("a client without a reader was accepted")
	}
}

func TestWrapNeverClaimsMoreNorLess(t *testing.T) {
	inner, wrapper := stubOps{name: "inner"}, stubOps{name: "wrapper"}
	all := Ops{Reader: wrapper, Versions: wrapper, Lister: wrapper, Writer: wrapper, Checker: wrapper, Closer: wrapper}
	for _, tc := range []struct {
		name string
		ops  Ops
	}{
		{"read only", Ops{Reader: inner}},
		{"versions", Ops{Reader: inner, Versions: inner}},
		{"list", Ops{Reader: inner, Lister: inner}},
		{"everything", Ops{Reader: inner, Versions: inner, Lister: inner, Writer: inner, Checker: inner, Closer: inner}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := NewClient("p", tc.ops)
			w := c.Wrap(func(Ops) Ops { return all })
			if w.Capabilities() != c.Capabilities() {
				t.Fatalf("wrapper claims %s, provider has %s", w.Capabilities(), c.Capabilities())
			}
			if w.Provider() != "p" {
				t.Fatalf("wrapper lost the provider name: %q", w.Provider())
			}
			obj, _ := w.GetSecret(context.Background(), Ref{})
			if obj.Version != "wrapper" {
				t.Fatal("the wrapped reader is not used")
			}
			// A wrapper that wraps nothing keeps every operation.
			same := c.Wrap(func(Ops) Ops { return Ops{} })
			if same.Capabilities() != c.Capabilities() {
				t.Fatalf("an empty wrapper changed %s into %s", c.Capabilities(), same.Capabilities())
			}
			if obj, _ := same.GetSecret(context.Background(), Ref{}); obj.Version != "inner" {
				t.Fatal("an empty wrapper must keep the inner reader")
			}
		})
	}
}

// deadlines records whether each call had a deadline.
type deadlines struct{ seen *[]bool }

func (d deadlines) note(ctx context.Context) {
	_, ok := ctx.Deadline()
	*d.seen = append(*d.seen, ok)
}
func (d deadlines) GetSecret(ctx context.Context, _ Ref) (Object, error) {
	d.note(ctx)
	return Object{}, nil
}
func (d deadlines) CurrentVersion(ctx context.Context, _ string) (string, error) {
	d.note(ctx)
	return "", nil
}
func (d deadlines) PutSecret(ctx context.Context, _ string, _ Publication, _ Owner) (string, error) {
	d.note(ctx)
	return "", nil
}
func (d deadlines) DeleteSecret(ctx context.Context, _ string, _ Owner) error {
	d.note(ctx)
	return nil
}
func (d deadlines) Check(ctx context.Context) error { d.note(ctx); return nil }
func (d deadlines) List(ctx context.Context, _ ListRequest) (ListPage, error) {
	d.note(ctx)
	return ListPage{}, nil
}

func TestEveryCallHasADeadline(t *testing.T) {
	var seen []bool
	d := deadlines{seen: &seen}
	c, _ := NewClient("p", Ops{Reader: d, Versions: d, Lister: d, Writer: d, Checker: d})
	ctx := context.Background()
	_, _ = c.GetSecret(ctx, Ref{})
	vr, _ := c.AsVersionReader()
	_, _ = vr.CurrentVersion(ctx, "k")
	w, _ := c.AsWriter()
	_, _ = w.PutSecret(ctx, "k", Publication{}, Owner{})
	_ = w.DeleteSecret(ctx, "k", Owner{})
	_ = c.Check(ctx)
	l, _ := c.AsLister()
	_, _ = l.List(ctx, ListRequest{})
	if len(seen) != 6 {
		t.Fatalf("%d calls reached the provider, want 6", len(seen))
	}
	for i, ok := range seen {
		if !ok {
			t.Errorf("call %d had no deadline", i)
		}
	}
}
