package engine

import (
	"context"
	"errors"
	"testing"
)

// keyStore records the keys it is asked for.
type keyStore struct{ got *[]string }

func (k keyStore) GetSecret(_ context.Context, ref Ref) (Object, error) {
	*k.got = append(*k.got, "get "+ref.Key)
	return Object{}, nil
}

func (k keyStore) PutSecret(_ context.Context, key string, _ Publication, _ Owner) (string, error) {
	*k.got = append(*k.got, "put "+key)
	return "", nil
}

func (k keyStore) DeleteSecret(_ context.Context, key string, _ Owner) error {
	*k.got = append(*k.got, "delete "+key)
	return nil
}

func use(t *testing.T, c *Client) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.GetSecret(ctx, Ref{Key: "db"}); err != nil {
		t.Fatal(err)
	}
	w, err := c.AsWriter()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.PutSecret(ctx, "db", Publication{}, Owner{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteSecret(ctx, "db", Owner{ID: "x"}); err != nil {
		t.Fatal(err)
	}
}

func TestInScopePrefixesKeysOfAStoreWithoutScopes(t *testing.T) {
	var got []string
	ks := keyStore{&got}
	c, err := NewClient("plain", Ops{Reader: ks, Writer: ks})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := c.InScope("team-a")
	if err != nil {
		t.Fatal(err)
	}
	use(t, sc)
	want := []string{"get team-a.db", "put team-a.db", "delete team-a.db"}
	if len(got) != len(want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestInScopeUsesTheProvidersScopeAndKeepsWrappers(t *testing.T) {
	var unscoped, scoped []string
	var scopes []string
	ops := Ops{Reader: keyStore{&unscoped}, Writer: keyStore{&unscoped}}
	ops.Scope = func(s string) (Ops, error) {
		scopes = append(scopes, s)
		return Ops{Reader: keyStore{&scoped}, Writer: keyStore{&scoped}}, nil
	}
	c, err := NewClient("scoping", ops)
	if err != nil {
		t.Fatal(err)
	}
	wrapped := 0
	c = c.Wrap(func(Ops) Ops {
		wrapped++
		return Ops{}
	})
	sc, err := c.InScope("team-b")
	if err != nil {
		t.Fatal(err)
	}
	use(t, sc)
	if len(scopes) != 1 || scopes[0] != "team-b" {
		t.Errorf("the provider was asked for scopes %v, want [team-b]", scopes)
	}
	if len(unscoped) != 0 || len(scoped) != 3 || scoped[0] != "get db" {
		t.Errorf("unscoped calls %v, scoped calls %v: want every call in the scope, keys as given", unscoped, scoped)
	}
	if wrapped != 2 {
		t.Errorf("the wrapper ran %d times, want once for the store's client and once for the scoped one", wrapped)
	}
}

func TestInScopeRefusesAScopeThatIsNotANamespace(t *testing.T) {
	var got []string
	c, err := NewClient("plain", Ops{Reader: keyStore{&got}})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "../x", "Team", "a/b"} {
		if _, err := c.InScope(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("InScope(%q) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

func TestInScopeRefusesNamesThatClimbOut(t *testing.T) {
	var got []string
	ks := keyStore{&got}
	c, err := NewClient("plain", Ops{Reader: ks, Writer: ks})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := c.InScope("team-a")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := sc.AsWriter()
	for _, bad := range []string{"../team-b/db", "x/../../db", "/db", "a//b", "./db"} {
		if _, err := w.PutSecret(context.Background(), bad, Publication{}, Owner{ID: "x"}); err == nil {
			t.Errorf("PutSecret(%q) = %v, want a refusal", bad, err)
		}
		if err := w.DeleteSecret(context.Background(), bad, Owner{ID: "x"}); err == nil {
			t.Errorf("DeleteSecret(%q) was not refused", bad)
		}
		if _, err := sc.GetSecret(context.Background(), Ref{Key: bad}); err == nil {
			t.Errorf("GetSecret(%q) was not refused", bad)
		}
	}
	if len(got) != 0 {
		t.Errorf("the store was called with %v", got)
	}
}

// batchKeys records the refs of each batch read and answers each ref with
// its key as the version.
type batchKeys struct {
	got   *[][]string
	short bool
}

func (b batchKeys) GetSecret(_ context.Context, ref Ref) (Object, error) {
	return Object{Version: ref.Key}, nil
}

func (b batchKeys) GetSecrets(_ context.Context, refs []Ref) ([]BatchItem, error) {
	keys := make([]string, len(refs))
	out := make([]BatchItem, len(refs))
	for i, r := range refs {
		keys[i] = r.Key
		out[i].Object.Version = r.Key
	}
	*b.got = append(*b.got, keys)
	if b.short {
		return out[:len(out)-1], nil
	}
	return out, nil
}

func TestPrefixBatchPrefixesKeysAndRefusesClimbingOutPerItem(t *testing.T) {
	var got [][]string
	ops := PrefixKeys(Ops{Reader: batchKeys{got: &got}, Batch: batchKeys{got: &got}}, "team-a.")
	items, err := ops.Batch.GetSecrets(context.Background(), []Ref{{Key: "db"}, {Key: "../x"}, {Key: "api", Version: "3"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0]) != 2 || got[0][0] != "team-a.db" || got[0][1] != "team-a.api" {
		t.Fatalf("the store was asked for %v, want one batch of [team-a.db team-a.api]", got)
	}
	if len(items) != 3 || items[0].Object.Version != "team-a.db" || items[2].Object.Version != "team-a.api" {
		t.Fatalf("items out of the order of the refs: %+v", items)
	}
	if items[1].Err == nil || items[0].Err != nil || items[2].Err != nil {
		t.Fatalf("only the ref that climbs out fails: %v, %v, %v", items[0].Err, items[1].Err, items[2].Err)
	}

	// Every ref refused: no call at all.
	got = nil
	items, err = ops.Batch.GetSecrets(context.Background(), []Ref{{Key: "a//b"}})
	if err != nil || len(got) != 0 || items[0].Err == nil {
		t.Fatalf("a batch of refused refs: %v, %v, store asked %v", items, err, got)
	}

	// A store that answers with fewer items than refs fails the batch.
	short := PrefixKeys(Ops{Reader: batchKeys{got: &got}, Batch: batchKeys{got: &got, short: true}}, "team-a.")
	if _, err := short.Batch.GetSecrets(context.Background(), []Ref{{Key: "db"}, {Key: "api"}}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a short answer: %v, want ErrUnavailable", err)
	}
}
