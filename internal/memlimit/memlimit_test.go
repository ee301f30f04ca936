package memlimit

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"268435456\n":         268435456,
		"max\n":               0,
		"9223372036854771712": 0, // cgroup v1 without a limit
		"":                    0,
		"-1":                  0,
	} {
		if got := parse(in); got != want {
			t.Errorf("parse(%q) = %d, want %d", in, got, want)
		}
	}
}
