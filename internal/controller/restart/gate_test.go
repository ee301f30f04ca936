package restart

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGate(t *testing.T) {
	a := Ref{"Deployment", "ns", "a"}
	b := Ref{"Deployment", "ns", "b"}
	c := Ref{"StatefulSet", "ns", "c"}
	rolledOut := map[Ref]bool{}
	available := func(r Ref, _ int64) bool { return rolledOut[r] }
	g := NewGate(Rate{Count: 6, Per: time.Minute}) // one every 10 seconds

	if v := admitWritten(g, at(0), a, false, available); !v.Go {
		t.Fatalf("the first restart is held: %+v", v)
	}
	// b waits for the rate, whatever a does meanwhile.
	v := admitWritten(g, at(1), b, false, available)
	if v.Go || v.Reason != HeldRate || v.RetryAfter != 9*time.Second {
		t.Fatalf("b within the rate: %+v", v)
	}
	// Once the rate allows it, b waits for a, restarted before it.
	v = admitWritten(g, at(10), b, false, available)
	if v.Go || v.Reason != HeldPrevious || v.Behind != a.String() || v.RetryAfter != pollHeld {
		t.Fatalf("b while a rolls out: %+v", v)
	}
	rolledOut[a] = true
	if v := admitWritten(g, at(11), b, false, available); !v.Go {
		t.Fatalf("b when the rate allows and a is available: %+v", v)
	}
	// b's own rollout holds its next restart.
	if v := admitWritten(g, at(30), b, true, available); v.Go || v.Reason != HeldRollout {
		t.Fatalf("b during its own rollout: %+v", v)
	}
	// c is not held by b's own rollout... but by b being the last one.
	if v := admitWritten(g, at(31), c, false, available); v.Go || v.Reason != HeldPrevious || v.Behind != b.String() {
		t.Fatalf("c while b rolls out: %+v", v)
	}
	// Once b is gone, nothing holds c.
	g.Forget(b)
	if v := admitWritten(g, at(32), c, false, available); !v.Go {
		t.Fatalf("c after b is gone: %+v", v)
	}
}

// TestGateNamesTheRate: a restart that the rate holds is held for the
// rate, with its wait and the rate in the message, even while the
// restart before it is not available yet, as it never is just after it
// was admitted (its patch under way, then not yet seen by its
// controller, even with no replicas). Once the rate allows it, it waits
// for the restart before it alone.
func TestGateNamesTheRate(t *testing.T) {
	a, b := Ref{"Deployment", "ns", "a"}, Ref{"Deployment", "ns", "b"}
	seen := false
	available := func(Ref, int64) bool { return seen }
	g := NewGate(Rate{Count: 2, Per: 10 * time.Second})
	if v := g.Admit(at(0), a, false, available); !v.Go {
		t.Fatalf("a held: %+v", v)
	}
	const held = "the restart waits 5s: at most 2 restarts in any 10s across the cluster, spaced evenly (--restart-rate 2/10s)"
	// a's patch is under way.
	if v := g.Admit(at(0), b, false, available); v.Go || v.Reason != HeldRate || v.RetryAfter != 5*time.Second || v.Message != held {
		t.Errorf("b while a's restart is written: %+v, want held for the rate, 5s", v)
	}
	// a's controller has not yet seen its restart.
	g.Restarted(a, 2)
	if v := g.Admit(at(0), b, false, available); v.Go || v.Reason != HeldRate || v.RetryAfter != 5*time.Second || v.Message != held {
		t.Errorf("b before a's restart is seen: %+v, want held for the rate, 5s", v)
	}
	if v := g.Admit(at(5), b, false, available); v.Go || v.Reason != HeldPrevious {
		t.Errorf("b once the rate allows it, a not yet available: %+v, want held for a", v)
	}
	seen = true
	if v := g.Admit(at(5), b, false, available); !v.Go {
		t.Errorf("b once the rate allows it and a is available: %+v", v)
	}
	// A wait under a second is not "0s".
	if got := waitText(300 * time.Millisecond); got != "300ms" {
		t.Errorf("waitText(300ms) = %q", got)
	}
}

func TestGateWithoutRate(t *testing.T) {
	g := NewGate(Rate{})
	for i := range 100 {
		r := Ref{"Deployment", "ns", string(rune('a' + i%26))}
		if v := admitWritten(g, at(0), r, false, func(Ref, int64) bool { return true }); !v.Go {
			t.Fatalf("restart %d held without a rate: %+v", i, v)
		}
	}
}

// TestGateRateWithTimesOutOfOrder: callers read the clock before they
// take the gate's lock, so times arrive out of order. A time before the
// last admitted one waits for the interval after it, and no window holds
// more restarts than the rate allows.
func TestGateRateWithTimesOutOfOrder(t *testing.T) {
	always := func(Ref, int64) bool { return true }
	g := NewGate(Rate{Count: 1, Per: 10 * time.Second})
	if v := admitWritten(g, at(10), Ref{"Deployment", "ns", "a"}, false, always); !v.Go {
		t.Fatalf("first restart held: %+v", v)
	}
	b := Ref{"Deployment", "ns", "b"}
	if v := admitWritten(g, at(5), b, false, always); v.Go || v.Reason != HeldRate || v.RetryAfter != 15*time.Second {
		t.Fatalf("a time before the last admitted one: %+v, want held for 15s", v)
	}
	if v := admitWritten(g, at(19), b, false, always); v.Go || v.RetryAfter != time.Second {
		t.Fatalf("within the interval: %+v, want held for 1s", v)
	}
	if v := admitWritten(g, at(20), b, false, always); !v.Go {
		t.Fatalf("one interval after the last: %+v", v)
	}

	// Many callers, each time up to 300ms off the order they arrive in.
	rate := Rate{Count: 3, Per: time.Second}
	g = NewGate(rate)
	rnd := rand.New(rand.NewPCG(1, 2))
	var admitted []time.Time
	for i := range 3000 {
		now := time.Unix(1000, 0).Add(time.Duration(i)*10*time.Millisecond + time.Duration(rnd.IntN(300))*time.Millisecond)
		if admitWritten(g, now, Ref{"Deployment", "ns", fmt.Sprint(i)}, false, always).Go {
			admitted = append(admitted, now)
		}
	}
	if !slices.IsSortedFunc(admitted, func(a, b time.Time) int { return a.Compare(b) }) {
		t.Errorf("admitted times out of order: %v", admitted)
	}
	for i, start := range admitted {
		n := 0
		for _, at := range admitted[i:] {
			if at.Sub(start) < rate.Per {
				n++
			}
		}
		if n > rate.Count {
			t.Fatalf("%d restarts in the window of %s from %s, want at most %d", n, rate.Per, start.Format(time.StampMilli), rate.Count)
		}
	}
	// The rate is used, not only kept: 30 s of asking nearly fills it
	// (a time that comes late waits, and the next may be later still).
	if len(admitted) < 75 {
		t.Errorf("%d restarts admitted in 30s at %s, want nearly 90", len(admitted), rate)
	}
}

// TestGateWakesHeldRestarts: when the workload restarted last becomes
// available, the restarts held meanwhile are returned once, to be asked
// about again at once.
func TestGateWakesHeldRestarts(t *testing.T) {
	a, b, c := Ref{"Deployment", "ns", "a"}, Ref{"Deployment", "ns", "b"}, Ref{"DaemonSet", "ns", "c"}
	rolledOut := map[Ref]bool{}
	available := func(r Ref, _ int64) bool { return rolledOut[r] }
	g := NewGate(Rate{})
	if got := g.Observed(a, 1, true); got != nil {
		t.Fatalf("nothing restarted yet, yet %v woken", got)
	}
	if v := admitWritten(g, at(0), a, false, available); !v.Go {
		t.Fatalf("a held: %+v", v)
	}
	for _, r := range []Ref{b, c} {
		if v := admitWritten(g, at(1), r, false, available); v.Go || v.Reason != HeldPrevious {
			t.Fatalf("%s while a rolls out: %+v", r, v)
		}
	}
	if got := g.Observed(b, 1, true); got != nil {
		t.Errorf("b is not the one restarted last, yet %v woken", got)
	}
	if got := g.Observed(a, 1, false); got != nil {
		t.Errorf("a still rolling out, yet %v woken", got)
	}
	got := g.Observed(a, 1, true)
	slices.SortFunc(got, func(x, y Ref) int { return strings.Compare(x.String(), y.String()) })
	if want := []Ref{c, b}; !slices.Equal(got, want) {
		t.Errorf("a available: woke %v, want %v", got, want)
	}
	if got := g.Observed(a, 1, true); got != nil {
		t.Errorf("a seen available again: woke %v, want nothing new", got)
	}
	rolledOut[a] = true
	if v := admitWritten(g, at(2), b, false, available); !v.Go {
		t.Fatalf("b after a is available: %+v", v)
	}
	if got := g.Forget(b); len(got) != 1 || got[0] != c {
		t.Errorf("b gone: woke %v, want [%s]", got, c)
	}
}

// admitWritten asks the gate, and when the restart goes ahead reports it
// written at generation 1, as the reconciler does after its patch.
func admitWritten(g *Gate, now time.Time, ref Ref, rollingOut bool, available func(Ref, int64) bool) Verdict {
	v := g.Admit(now, ref, rollingOut, available)
	if v.Go {
		g.Restarted(ref, 1)
	}
	return v
}

// TestGateHoldsUntilItsOwnRestartIsSeen: between a restart's admission
// and its write, and while the versions of that workload seen are older
// than the write (a cache behind it, still showing the finished rollout
// before the restart), the next restart is held, and no version older
// than the restart wakes it.
func TestGateHoldsUntilItsOwnRestartIsSeen(t *testing.T) {
	a, b := Ref{"Deployment", "ns", "a"}, Ref{"Deployment", "ns", "b"}
	seenGen := int64(4) // the cache's version of a, its rollout finished
	available := func(r Ref, minGen int64) bool { return r != a || seenGen >= minGen }
	g := NewGate(Rate{})
	if v := g.Admit(at(0), a, false, available); !v.Go {
		t.Fatalf("a held: %+v", v)
	}
	if v := g.Admit(at(1), b, false, available); v.Go || v.Reason != HeldPrevious {
		t.Fatalf("b while a's restart is being written: %+v, want held", v)
	}
	g.Restarted(a, 5)
	if v := g.Admit(at(2), b, false, available); v.Go || v.Reason != HeldPrevious {
		t.Fatalf("b while only a's version before the restart is seen: %+v, want held", v)
	}
	if got := g.Observed(a, 4, true); got != nil {
		t.Errorf("a's version before the restart woke %v", got)
	}
	seenGen = 5
	if got := g.Observed(a, 5, true); len(got) != 1 || got[0] != b {
		t.Errorf("a's restart seen finished: woke %v, want [%s]", got, b)
	}
	if v := g.Admit(at(3), b, false, available); !v.Go {
		t.Fatalf("b after a's restart is seen finished: %+v", v)
	}
	// A restart whose write failed holds nothing back.
	g.Restarted(b, 0)
	if v := g.Admit(at(4), a, false, available); !v.Go {
		t.Fatalf("a after b's write failed: %+v", v)
	}
}
