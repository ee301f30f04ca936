package operator

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func TestLeaderElectionID(t *testing.T) {
	long := strings.Repeat("shard", 60)
	cases := []struct {
		name, class string
		want        string // exact, or empty when only the shape is checked
		prefix      string // with want empty: the readable part before the hash
	}{
		{name: "default class", class: "", want: "watchword-leader"},
		{name: "a class stores can name", class: "shard-a", want: "watchword-leader-shard-a"},
		{name: "dots are kept", class: "team.example", want: "watchword-leader-team.example"},
		{name: "the longest class stores can name", class: strings.Repeat("a", 63), want: "watchword-leader-" + strings.Repeat("a", 63)},
		{name: "uppercase", class: "Shard-A", prefix: "watchword-leader-shard-a-"},
		{name: "invalid characters", class: "team/shard_a", prefix: "watchword-leader-team-shard-a-"},
		{name: "runs of invalid characters", class: "a__/b", prefix: "watchword-leader-a-b-"},
		{name: "only invalid characters", class: "__", prefix: "watchword-leader-"},
		{name: "not ASCII", class: "Ünïcode", prefix: "watchword-leader-n-code-"},
		{name: "leading and trailing dashes", class: "-x-", prefix: "watchword-leader-x-"},
		{name: "too long", class: long, prefix: "watchword-leader-shardshard"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := LeaderElectionID(c.class)
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Fatalf("LeaderElectionID(%q) = %q, not a valid name: %v", c.class, got, errs)
			}
			if got != LeaderElectionID(c.class) {
				t.Fatalf("LeaderElectionID(%q) is not stable", c.class)
			}
			if c.want != "" {
				if got != c.want {
					t.Fatalf("LeaderElectionID(%q) = %q, want %q", c.class, got, c.want)
				}
				return
			}
			if !strings.HasPrefix(got, c.prefix) || len(got) > validation.DNS1123LabelMaxLength {
				t.Fatalf("LeaderElectionID(%q) = %q, want %q followed by a hash, at most 63 characters", c.class, got, c.prefix)
			}
		})
	}
}

// Classes that sanitize to the same text, or that differ only past the
// length kept, still get leases of their own.
func TestLeaderElectionIDNeverShared(t *testing.T) {
	long := strings.Repeat("x", 100)
	classes := []string{"", "shard-a", "Shard-A", "shard_a", "shard.a", "shard/a", "SHARD-A",
		"__", "--", "/", long + "1", long + "2", "x", "X"}
	seen := map[string]string{}
	for _, class := range classes {
		id := LeaderElectionID(class)
		if other, dup := seen[id]; dup {
			t.Errorf("classes %q and %q share the lease %q", other, class, id)
		}
		seen[id] = class
	}
}

func TestALeaseIsHeldWhileItsHolderRenewsIt(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(holder string, renewed time.Duration) *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		l.Spec.HolderIdentity = &holder
		l.Spec.LeaseDurationSeconds = ptr.To[int32](15)
		l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-renewed)}
		return l
	}
	for _, tc := range []struct {
		what  string
		lease *coordinationv1.Lease
		held  bool
	}{
		{"renewed 5 s ago", lease("a", 5*time.Second), true},
		{"renewed 20 s ago, past its 15 s", lease("a", 20*time.Second), false},
		{"released (no holder)", lease("", time.Second), false},
		{"never renewed", &coordinationv1.Lease{}, false},
	} {
		if got := heldAt(tc.lease, now); got != tc.held {
			t.Errorf("a lease %s: held %v, want %v", tc.what, got, tc.held)
		}
	}
}

// TestOneClientBudget: the clients the controller builds from its
// configuration, of any kind and by any constructor, draw from one token
// bucket of Options.QPS and Options.Burst; leader election's have none.
func TestOneClientBudget(t *testing.T) {
	// A limiter of the caller's is replaced, not shared or kept.
	theirs := flowcontrol.NewTokenBucketRateLimiter(1000, 1000)
	in := &rest.Config{Host: "https://api.invalid", QPS: 1000, Burst: 1000, RateLimiter: theirs}
	shared, leader := restConfigs(in, Options{QPS: 5, Burst: 5})
	if in.RateLimiter != theirs || in.QPS != 1000 {
		t.Fatal("the caller's configuration was changed")
	}
	httpClient, err := rest.HTTPClientFor(shared)
	if err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(Scheme())
	var limiters []flowcontrol.RateLimiter
	for _, gvk := range []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("Secret"), corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		v1alpha1.GroupVersion.WithKind("ExternalSecret"),
	} {
		c, cerr := apiutil.RESTClientForGVK(gvk, false, false, shared, codecs, httpClient)
		if cerr != nil {
			t.Fatal(cerr)
		}
		limiters = append(limiters, c.GetRateLimiter())
	}
	kube, err := kubernetes.NewForConfig(shared)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(shared)
	if err != nil {
		t.Fatal(err)
	}
	limiters = append(limiters, kube.CoreV1().RESTClient().GetRateLimiter(), kube.EventsV1().RESTClient().GetRateLimiter(),
		disc.RESTClient().GetRateLimiter())
	// Five tokens, taken one by one by the clients in turn: then none is
	// left for any of them.
	for i := range 5 {
		if !limiters[i%len(limiters)].TryAccept() {
			t.Fatalf("request %d of a burst of 5 was refused", i+1)
		}
	}
	for i, l := range limiters {
		if l.TryAccept() {
			t.Fatalf("client %d let a sixth request through at once: it has a bucket of its own", i)
		}
	}

	lkube, err := kubernetes.NewForConfig(leader)
	if err != nil {
		t.Fatal(err)
	}
	if l := lkube.CoordinationV1().RESTClient().GetRateLimiter(); l != nil {
		t.Fatalf("leader election's client has a client-side limit: %T", l)
	}

	t.Run("a burst below 1 still lets a request through", func(t *testing.T) {
		shared, _ := restConfigs(in, Options{QPS: 5, Burst: 0})
		if !shared.RateLimiter.TryAccept() {
			t.Fatal("the first request was refused")
		}
	})
	t.Run("a QPS of zero or less is no limit", func(t *testing.T) {
		for _, qps := range []float32{0, -1} {
			shared, _ := restConfigs(in, Options{QPS: qps, Burst: 5})
			kube, err := kubernetes.NewForConfig(shared)
			if err != nil {
				t.Fatal(err)
			}
			if l := kube.CoreV1().RESTClient().GetRateLimiter(); l != nil {
				t.Fatalf("QPS %g: the client has a limit: %T", qps, l)
			}
		}
	})
}
