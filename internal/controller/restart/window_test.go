package restart

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
)

func TestParseWindowErrors(t *testing.T) {
	cases := []struct {
		name, spec, length, err string
	}{
		{"no window", "", "", ""},
		{"a duration without a window is no window", "", "soon", ""},
		{"weekday mornings in Berlin", "CRON_TZ=Europe/Berlin 0 2 * * 1-5", "2h", ""},
		{"a descriptor", "@daily", "", ""},
		{"six fields, seconds first", "30 0 2 * * *", "", ""},
		{"not cron", "Mon-Fri 02:00-04:00", "", WindowAnnotation + ` "Mon-Fri 02:00-04:00" does not parse`},
		{"a field out of range", "61 2 * * *", "", WindowAnnotation + ` "61 2 * * *" does not parse`},
		{"an unknown zone", "CRON_TZ=Mars/Olympus 0 2 * * *", "", "does not parse (provided bad location Mars/Olympus"},
		{"a zone alone", "CRON_TZ=Europe/Berlin", "", "has a time zone but no schedule"},
		{"a period", "@every 1h", "", "uses @every"},
		{"never opens", "0 0 30 2 *", "", "never opens"},
		{"a duration that is not one", "0 2 * * *", "soon", WindowDurationAnnotation + ` "soon" is not a positive duration`},
		{"a zero duration", "0 2 * * *", "0s", WindowDurationAnnotation + ` "0s" is not a positive duration`},
		{"a negative duration", "0 2 * * *", "-1h", "is not a positive duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseWindow(c.spec, c.length)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one with %q", err, c.err)
			case err != nil && !strings.Contains(err.Error(), "write "):
				t.Fatalf("error %q does not say what to write", err)
			}
		})
	}
}

func TestWindowOpen(t *testing.T) {
	// 2026-11-23 is a Monday; Berlin is at UTC+1 in November.
	utc := func(day, hour, minute, second int) time.Time {
		return time.Date(2026, 11, day, hour, minute, second, 0, time.UTC)
	}
	berlin, err := ParseWindow("CRON_TZ=Europe/Berlin 0 2 * * 1-5", "2h")
	if err != nil {
		t.Fatal(err)
	}
	nightly, err := ParseWindow("0 22 * * *", "8h")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		w     *Window
		now   time.Time
		open  bool
		opens time.Time
	}{
		{"no window is open", nil, utc(23, 12, 0, 0), true, time.Time{}},
		{"just before it opens", berlin, utc(23, 0, 59, 59), false, utc(23, 1, 0, 0)},
		{"as it opens", berlin, utc(23, 1, 0, 0), true, utc(23, 1, 0, 0)},
		{"just before it closes", berlin, utc(23, 2, 59, 59), true, utc(23, 1, 0, 0)},
		{"as it closes", berlin, utc(23, 3, 0, 0), false, utc(24, 1, 0, 0)},
		{"friday after it closed: monday", berlin, utc(27, 3, 0, 0), false, utc(30, 1, 0, 0)},
		{"on saturday: monday", berlin, utc(28, 1, 30, 0), false, utc(30, 1, 0, 0)},
		{"a window across midnight, after midnight", nightly, utc(24, 5, 0, 0), true, utc(23, 22, 0, 0)},
		{"a window across midnight, after it closed", nightly, utc(24, 6, 0, 0), false, utc(24, 22, 0, 0)},
		{"a time in another zone", berlin, utc(23, 1, 30, 0).In(time.FixedZone("X", -5*3600)), true, utc(23, 1, 0, 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			open, opens := c.w.Open(c.now)
			if open != c.open || !opens.Equal(c.opens) {
				t.Fatalf("open %v, opens %s; want %v, %s", open, opens, c.open, c.opens)
			}
		})
	}
}

// TestAdmitWaitsForTheWindow: a due restart outside the window is held
// until the window opens, says when that is, and goes ahead through the
// gate once it is open; one whose window does not parse is held without a
// retry.
func TestAdmitWaitsForTheWindow(t *testing.T) {
	r := &Reconciler{Gate: NewGate(Rate{})}
	ref := Ref{Kind: "Deployment", Namespace: "ns", Name: "web"}
	w, err := ParseWindow("0 12 * * *", "1h")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dep := &appsv1.Deployment{}
	dep.Spec.Replicas = ptr.To[int32](1)
	dep.Status = appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
	noon := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

	v := r.admit(ctx, noon.Add(-10*time.Second), ref, dep, w, false)
	if v.Go || v.Reason != HeldWindow || v.RetryAfter != 10*time.Second {
		t.Fatalf("before the window: %+v", v)
	}
	if !strings.Contains(v.Message, "opens at 2026-11-23T12:00:00Z") {
		t.Fatalf("message %q does not say when", v.Message)
	}
	if v = r.admit(ctx, noon, ref, dep, w, false); !v.Go {
		t.Fatalf("in the window: %+v", v)
	}
	v = r.admit(ctx, noon.Add(time.Hour), ref, dep, w, false)
	if v.Go || v.RetryAfter != 23*time.Hour {
		t.Fatalf("after the window: %+v", v)
	}
	if v := r.admit(ctx, noon, ref, dep, nil, true); v.Go || v.Reason != HeldInvalidWindow || v.RetryAfter != 0 {
		t.Fatalf("invalid window: %+v", v)
	}
}

// FuzzParseWindow: no annotation value makes the parser panic, and a
// window that parses tells whether it is open at any time.
func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"0 2 * * 1-5", "CRON_TZ=Europe/Berlin 0 2 * * MON-FRI", "TZ=", "CRON_TZ=UTC", "@daily", "@every 1h", "30 0 2 * * *", "0 0 30 2 *"} {
		f.Add(s, "2h")
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(_ *testing.T, spec, length string) {
		w, err := ParseWindow(spec, length)
		if err != nil {
			return
		}
		w.Open(now)
	})
}
