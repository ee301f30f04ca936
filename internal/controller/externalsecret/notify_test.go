package externalsecret

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func reading(ns string, store v1alpha1.StoreRef, keys ...string) *v1alpha1.ExternalSecret {
	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "es"}}
	es.Spec.SecretStoreRef = store
	for _, k := range keys {
		es.Spec.Data = append(es.Spec.Data, v1alpha1.ExternalSecretData{SecretKey: k, RemoteRef: v1alpha1.RemoteReference{Key: k}})
	}
	return es
}

func TestNoticesMakeASyncDueAndReadOnlyTheirKeysAnew(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	last := now.Add(-10 * time.Minute)
	announced := now.Add(-time.Second)
	es := reading("ns", v1alpha1.StoreRef{Name: "s"}, "db/creds", "api/token")
	s := schedule{now: now, interval: time.Hour, lastRead: &last}
	if s.due() {
		t.Fatal("read 10 minutes ago with an hourly refresh: want not due")
	}
	// A notice of a key the ExternalSecret does not read changes nothing.
	if got := s.withNotices(es, map[string]time.Time{"other": announced}); got.due() || got.readAfter() != nil {
		t.Fatalf("a notice of a key not read: due %v, readAfter %v", got.due(), got.readAfter())
	}
	n := s.withNotices(es, map[string]time.Time{"db/creds": announced, "other": announced})
	if !n.due() {
		t.Fatal("a notice of a key read must make the sync due")
	}
	if ra := n.readAfter(); len(ra) != 1 || !ra["db/creds"].Equal(announced) {
		t.Fatalf("readAfter = %v, want only db/creds at the announcement", ra)
	}
	// The other keys keep the periodic max age (less the slack of a due
	// sync): they are not read again for it.
	if got := n.maxAge(); got != time.Hour-time.Second {
		t.Fatalf("maxAge = %v, want the interval less the slack", got)
	}
}

func TestNoticesCoalesceAndAreConsumedBySync(t *testing.T) {
	var n notices
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	// A burst of notifications of one key leaves one notice, at the latest.
	for i := range 5 {
		n.add("ns/es", []string{"db/creds"}, t0.Add(time.Duration(i)*time.Millisecond))
	}
	got := n.of("ns/es")
	if len(got) != 1 || !got["db/creds"].Equal(t0.Add(4*time.Millisecond)) {
		t.Fatalf("notices after a burst = %v, want one at the latest", got)
	}
	// of returns a copy.
	got["x"] = t0
	if _, ok := n.of("ns/es")["x"]; ok {
		t.Fatal("of must return a copy")
	}
	// A sync that started after the notice consumes it; one that started
	// before a later notice leaves that.
	n.add("ns/es", []string{"api/token"}, t0.Add(time.Second))
	n.consume("ns/es", t0.Add(500*time.Millisecond))
	if left := n.of("ns/es"); len(left) != 1 || !left["api/token"].Equal(t0.Add(time.Second)) {
		t.Fatalf("after a sync between two notices: %v, want the later one left", left)
	}
	n.consume("ns/es", t0.Add(time.Second))
	if left := n.of("ns/es"); len(left) != 0 {
		t.Fatalf("after a sync at the last notice: %v, want none", left)
	}
	n.add("ns/gone", []string{"k"}, t0)
	n.drop("ns/gone")
	if len(n.pending) != 0 {
		t.Fatalf("nothing must be kept: %v", n.pending)
	}
}

func TestReadKeysMatchesTheStoreReadFrom(t *testing.T) {
	ss := StoreKey(v1alpha1.SecretStoreKind, "ns", "s")
	css := StoreKey(v1alpha1.ClusterSecretStoreKind, "", "s")
	cases := []struct {
		name  string
		es    *v1alpha1.ExternalSecret
		store string
		want  int
	}{
		{"SecretStore by default kind", reading("ns", v1alpha1.StoreRef{Name: "s"}, "a", "b"), ss, 1},
		{"ClusterSecretStore", reading("ns", v1alpha1.StoreRef{Kind: v1alpha1.ClusterSecretStoreKind, Name: "s"}, "a"), css, 1},
		{"another store of the name", reading("ns", v1alpha1.StoreRef{Kind: v1alpha1.ClusterSecretStoreKind, Name: "s"}, "a"), ss, 0},
		{"keys not read", reading("ns", v1alpha1.StoreRef{Name: "s"}, "b"), ss, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := readKeys(tc.es, tc.store, []string{"a", "c"}); len(got) != tc.want {
				t.Fatalf("readKeys = %v, want %d keys", got, tc.want)
			}
		})
	}
}

func TestReadKeysOfNilIsEveryKeyReadFromTheStore(t *testing.T) {
	es := reading("ns", v1alpha1.StoreRef{Name: "s"}, "db/creds", "api/token", "db/creds")
	store := StoreKey(v1alpha1.SecretStoreKind, "ns", "s")
	if got := readKeys(es, store, nil); len(got) != 2 || got[0] != "db/creds" || got[1] != "api/token" {
		t.Fatalf("readKeys(nil) = %v, want every key read, once each", got)
	}
	if got := readKeys(es, store, []string{"api/token", "other"}); len(got) != 1 || got[0] != "api/token" {
		t.Fatalf("readKeys(named) = %v, want the named key read", got)
	}
	if got := readKeys(es, StoreKey(v1alpha1.SecretStoreKind, "ns", "another"), nil); got != nil {
		t.Fatalf("readKeys(nil) of a store not read from = %v, want none", got)
	}
}

func TestNotificationsAreTakenOnlyWhileLeading(t *testing.T) {
	r := &Reconciler{}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	// A standby's sources start before it leads (controller warmup): its
	// queue is there, and still it takes no notification.
	if err := r.notices.start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Notify(context.Background(), v1alpha1.SecretStoreKind, "ns", "s", nil); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("a standby with its queue started answered %v, want ErrNotRunning", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.notices.lead(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.notices.mu.Lock()
		leading := r.notices.leading
		r.notices.mu.Unlock()
		if leading {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lead did not mark the instance as leading")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if _, err := r.Notify(context.Background(), v1alpha1.SecretStoreKind, "ns", "s", nil); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("an instance that stopped leading answered %v, want ErrNotRunning", err)
	}
}
