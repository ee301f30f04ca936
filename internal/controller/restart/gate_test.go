package restart

import (
	"testing"
	"time"
)

func TestGate(t *testing.T) {
	a := Ref{"Deployment", "ns", "a"}
	b := Ref{"Deployment", "ns", "b"}
	c := Ref{"StatefulSet", "ns", "c"}
	rolledOut := map[Ref]bool{}
	available := func(r Ref) bool { return rolledOut[r] }
	g := NewGate(6) // one every 10 seconds

	if v := g.Admit(at(0), a, false, available); !v.Go {
		t.Fatalf("the first restart is held: %+v", v)
	}
	// b waits for a to be available again, and says so once.
	v := g.Admit(at(1), b, false, available)
	if v.Go || v.Reason != HeldPrevious || !v.Report || v.RetryAfter <= 0 {
		t.Fatalf("b while a rolls out: %+v", v)
	}
	if v2 := g.Admit(at(2), b, false, available); v2.Go || v2.Report {
		t.Fatalf("b asks again: %+v, want held without a second report", v2)
	}
	// a is available: b waits for the rate now, still one hold.
	rolledOut[a] = true
	v = g.Admit(at(3), b, false, available)
	if v.Go || v.Reason != HeldRate || v.Report || v.RetryAfter.Round(time.Millisecond) != 7*time.Second {
		t.Fatalf("b within the rate: %+v", v)
	}
	if v := g.Admit(at(10), b, false, available); !v.Go {
		t.Fatalf("b when the rate allows: %+v", v)
	}
	// A new hold of b is reported again.
	rolledOut[b] = true
	if v := g.Admit(at(30), b, true, available); v.Go || v.Reason != HeldRollout || !v.Report {
		t.Fatalf("b during its own rollout: %+v", v)
	}
	// c is not held by b's own rollout... but by b being the last one.
	rolledOut[b] = false
	if v := g.Admit(at(31), c, false, available); v.Go || v.Reason != HeldPrevious {
		t.Fatalf("c while b rolls out: %+v", v)
	}
	// A hold of a restart no longer owed is over: the next is reported.
	g.Settled(c)
	if v := g.Admit(at(31), c, false, available); v.Go || !v.Report {
		t.Fatalf("c held again after its hold was settled: %+v", v)
	}
	// Once b is gone, nothing holds c.
	g.Forget(b)
	if v := g.Admit(at(32), c, false, available); !v.Go {
		t.Fatalf("c after b is gone: %+v", v)
	}
}

func TestGateWithoutRate(t *testing.T) {
	g := NewGate(0)
	for i := range 100 {
		r := Ref{"Deployment", "ns", string(rune('a' + i%26))}
		if v := g.Admit(at(0), r, false, func(Ref) bool { return true }); !v.Go {
			t.Fatalf("restart %d held without a rate: %+v", i, v)
		}
	}
}
