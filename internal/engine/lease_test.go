package engine

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func TestNextLeaseAction(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(renewedAfter, duration, ttl time.Duration, renewable bool) *v1alpha1.VaultLeaseStatus {
		l := &v1alpha1.VaultLeaseStatus{ID: "database/creds/app/x", IssueTime: metav1.NewTime(t0),
			TTL: metav1.Duration{Duration: ttl}, Duration: metav1.Duration{Duration: duration}, Renewable: renewable}
		last := t0
		if renewedAfter > 0 {
			last = t0.Add(renewedAfter)
			l.RenewTime = &metav1.Time{Time: last}
		}
		l.ExpiryTime = metav1.NewTime(last.Add(duration))
		return l
	}
	cases := []struct {
		name    string
		lease   *v1alpha1.VaultLeaseStatus
		percent int32
		at      time.Duration // since t0
		want    LeaseAction
		next    time.Duration // since t0
		before  *metav1.Duration
	}{
		{"fresh lease waits for its share", lease(0, time.Hour, time.Hour, true), 50, 10 * time.Minute, LeaseKeep, 30 * time.Minute, nil},
		{"due lease is renewed", lease(0, time.Hour, time.Hour, true), 50, 30 * time.Minute, LeaseRenew, 30 * time.Minute, nil},
		{"the default share is 67%", lease(0, 100*time.Minute, 100*time.Minute, true), 0, 60 * time.Minute, LeaseKeep, 67 * time.Minute, nil},
		{"a renewed lease counts from its renewal", lease(40*time.Minute, time.Hour, time.Hour, true), 50, 60 * time.Minute, LeaseKeep, 70 * time.Minute, nil},
		{"a renewal capped by the maximum TTL rotates at its share", lease(40*time.Minute, 20*time.Minute, time.Hour, true), 50, 50 * time.Minute, LeaseRotate, 50 * time.Minute, nil},
		{"a lease that cannot be renewed rotates", lease(0, time.Hour, time.Hour, false), 67, 41 * time.Minute, LeaseRotate, 40*time.Minute + 12*time.Second, nil},
		{"an expired lease rotates", lease(0, time.Hour, time.Hour, true), 50, 2 * time.Hour, LeaseRotate, 30 * time.Minute, nil},
		{"renewBefore replaces the share: a certificate waits", lease(0, 90*24*time.Hour, 90*24*time.Hour, false), 67, 53 * 24 * time.Hour, LeaseKeep, 60 * 24 * time.Hour, &metav1.Duration{Duration: 30 * 24 * time.Hour}},
		{"renewBefore replaces the share: a certificate is replaced", lease(0, 90*24*time.Hour, 90*24*time.Hour, false), 67, 61 * 24 * time.Hour, LeaseRotate, 60 * 24 * time.Hour, &metav1.Duration{Duration: 30 * 24 * time.Hour}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// c.next is the due time before the lease's spread, which
			// brings it forward by up to a tenth of the wait.
			last := c.lease.IssueTime.Time
			if c.lease.RenewTime != nil {
				last = c.lease.RenewTime.Time
			}
			due := t0.Add(c.next)
			due = due.Add(-LeaseSpread(c.lease.ID, due.Sub(last)))
			got, next := NextLeaseActionFor(c.lease, &v1alpha1.VaultDynamicSecret{RenewPercent: c.percent, RenewBefore: c.before}, t0.Add(c.at))
			if got != c.want || !next.Equal(due) {
				t.Errorf("got %v at %s, want %v at %s", got, next.Sub(t0), c.want, due.Sub(t0))
			}
		})
	}
}

// TestLeaseSpreadKeepsLeasesIssuedTogetherApart: a thousand one-hour
// leases issued in the same second are not renewed in the same second:
// their renewals spread over the window before their due time (a tenth
// of the wait), none later than due, and the same lease keeps its time.
func TestLeaseSpreadKeepsLeasesIssuedTogetherApart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	v := &v1alpha1.VaultDynamicSecret{RenewPercent: 67}
	due := t0.Add(time.Hour * 67 / 100)
	window := (time.Hour * 67 / 100) / 10
	perSecond := map[int64]int{}
	earliest, latest := due, t0
	for i := range 1000 {
		l := &v1alpha1.VaultLeaseStatus{ID: fmt.Sprintf("database/creds/app/%08x", i*7919), IssueTime: metav1.NewTime(t0),
			TTL: metav1.Duration{Duration: time.Hour}, Duration: metav1.Duration{Duration: time.Hour},
			ExpiryTime: metav1.NewTime(t0.Add(time.Hour)), Renewable: true}
		_, at := NextLeaseActionFor(l, v, t0)
		if again, _ := NextLeaseActionFor(l, v, t0); again != LeaseKeep {
			t.Fatalf("a fresh lease is %v, want kept", again)
		}
		if _, at2 := NextLeaseActionFor(l, v, t0.Add(time.Minute)); !at2.Equal(at) {
			t.Fatalf("lease %s: due at %s, then at %s: the spread must not change", l.ID, at, at2)
		}
		if at.After(due) || at.Before(due.Add(-window)) {
			t.Fatalf("lease %s is due at %s, want within %s before %s", l.ID, at.Sub(t0), window, due.Sub(t0))
		}
		perSecond[at.Unix()]++
		earliest, latest = minTime(earliest, at), maxTime(latest, at)
	}
	most := 0
	for _, n := range perSecond {
		most = max(most, n)
	}
	// 1,000 renewals over a 4-minute window: about 4 a second on average.
	if most > 20 || latest.Sub(earliest) < window*9/10 {
		t.Fatalf("renewals: at most %d in one second, spread over %s of a %s window; want at most 20 and most of the window", most, latest.Sub(earliest), window)
	}
	if LeaseSpread("x", 10*24*time.Hour) >= MaxLeaseSpread || LeaseSpread("", time.Hour) != 0 {
		t.Fatal("the spread is bounded by MaxLeaseSpread and is zero without a lease ID")
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
