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
