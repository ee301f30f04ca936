package steps

import (
	"context"
	"errors"
	"testing"
)

type rec struct{ ran []string }

func step(name string, done bool, err error) Step[*rec, *int] {
	return Step[*rec, *int]{Name: name, Run: func(r *rec, _ context.Context, n *int) (bool, error) {
		r.ran = append(r.ran, name)
		*n++
		return done, err
	}}
}

func TestRunStopsAtDoneOrAtAFailure(t *testing.T) {
	boom := errors.New("boom")
	r, n := &rec{}, 0
	if name, err := Run(context.Background(), r, []Step[*rec, *int]{step("a", false, nil), step("b", true, nil), step("c", false, nil)}, &n); name != "" || err != nil {
		t.Fatalf("Run = %q, %v", name, err)
	}
	if len(r.ran) != 2 || n != 2 {
		t.Errorf("ran %v, want a and b only", r.ran)
	}
	r, n = &rec{}, 0
	name, err := Run(context.Background(), r, []Step[*rec, *int]{step("a", false, nil), step("b", false, boom), step("c", false, nil)}, &n)
	if name != "b" || !errors.Is(err, boom) || len(r.ran) != 2 {
		t.Errorf("Run = %q, %v after %v; want b's error and c not run", name, err, r.ran)
	}
}
