package operator

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
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
