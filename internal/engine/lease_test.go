package engine

import (
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
		{"the default share is 67%", lease(0, 100*time.Minute, 100*time.Minute, true), 0, 66 * time.Minute, LeaseKeep, 67 * time.Minute, nil},
		{"a renewed lease counts from its renewal", lease(40*time.Minute, time.Hour, time.Hour, true), 50, 60 * time.Minute, LeaseKeep, 70 * time.Minute, nil},
		{"a renewal capped by the maximum TTL rotates at its share", lease(40*time.Minute, 20*time.Minute, time.Hour, true), 50, 50 * time.Minute, LeaseRotate, 50 * time.Minute, nil},
		{"a lease that cannot be renewed rotates", lease(0, time.Hour, time.Hour, false), 67, 41 * time.Minute, LeaseRotate, 40*time.Minute + 12*time.Second, nil},
		{"an expired lease rotates", lease(0, time.Hour, time.Hour, true), 50, 2 * time.Hour, LeaseRotate, 30 * time.Minute, nil},
		{"renewBefore replaces the share: a certificate waits", lease(0, 90*24*time.Hour, 90*24*time.Hour, false), 67, 59 * 24 * time.Hour, LeaseKeep, 60 * 24 * time.Hour, &metav1.Duration{Duration: 30 * 24 * time.Hour}},
		{"renewBefore replaces the share: a certificate is replaced", lease(0, 90*24*time.Hour, 90*24*time.Hour, false), 67, 61 * 24 * time.Hour, LeaseRotate, 60 * 24 * time.Hour, &metav1.Duration{Duration: 30 * 24 * time.Hour}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, next := NextLeaseActionFor(c.lease, &v1alpha1.VaultDynamicSecret{RenewPercent: c.percent, RenewBefore: c.before}, t0.Add(c.at))
			if got != c.want || !next.Equal(t0.Add(c.next)) {
				t.Errorf("got %v at %s, want %v at %s", got, next.Sub(t0), c.want, c.next)
			}
		})
	}
}
