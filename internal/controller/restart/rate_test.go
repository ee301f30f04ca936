package restart

import (
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	cases := []struct {
		in       string
		want     Rate
		interval time.Duration
		text     string
	}{
		{"10/1m", Rate{10, time.Minute}, 6 * time.Second, "10/1m"},
		{"1/30s", Rate{1, 30 * time.Second}, 30 * time.Second, "1/30s"},
		{"10/5s", Rate{10, 5 * time.Second}, 500 * time.Millisecond, "10/5s"},
		{"3/1h", Rate{3, time.Hour}, 20 * time.Minute, "3/1h"},
		{"3/1s", Rate{3, time.Second}, 333333334 * time.Nanosecond, "3/1s"},
		{"10", Rate{10, time.Minute}, 6 * time.Second, "10/1m"},
		{"2.5", Rate{1, 24 * time.Second}, 24 * time.Second, "1/24s"},
		{"0", Rate{}, 0, "0"},
		{"0/1m", Rate{}, 0, "0"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseRate(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || got.Interval() != c.interval || got.String() != c.text {
				t.Errorf("%+v, interval %s, text %q; want %+v, %s, %q", got, got.Interval(), got, c.want, c.interval, c.text)
			}
			if again, err := ParseRate(got.String()); err != nil || again != got {
				t.Errorf("its text %q reads back as %+v (%v)", got, again, err)
			}
		})
	}
	refused := map[string]string{
		"":       "write N/D",
		"-1":     "write N/D",
		"NaN":    "write N/D",
		"1e-9":   "write N/D",
		"ten/1m": "N in N/D is a whole number",
		"-2/1m":  "N in N/D is a whole number",
		"1.5/1m": "N in N/D is a whole number",
		"10/":    "D in N/D is a Go duration above 0",
		"10/1":   "D in N/D is a Go duration above 0",
		"10/-1m": "D in N/D is a Go duration above 0",
	}
	for in, want := range refused {
		if _, err := ParseRate(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRate(%q): %v, want an error with %q", in, err, want)
		}
	}
}

func TestRateText(t *testing.T) {
	if got := (Rate{1, 30 * time.Second}).Text(); got != "1 restart in any 30s" {
		t.Errorf("%q", got)
	}
	if got := DefaultRate.Text(); got != "10 restarts in any 1m" {
		t.Errorf("%q", got)
	}
}
