package restart

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is how many restarts of workloads may happen across the cluster:
// at most Count in any window of Per, spaced evenly (one every Per/Count).
// A Count of zero or less means no limit.
type Rate struct {
	Count int
	Per   time.Duration
}

// DefaultRate is the default --restart-rate: ten a minute.
var DefaultRate = Rate{Count: 10, Per: time.Minute}

// Unlimited tells whether the rate sets no limit.
func (r Rate) Unlimited() bool { return r.Count <= 0 || r.Per <= 0 }

// Interval is the least time between two restarts: Per/Count, rounded up
// to the nanosecond so that Count intervals never fall short of Per.
func (r Rate) Interval() time.Duration {
	if r.Unlimited() {
		return 0
	}
	n := time.Duration(r.Count)
	return (r.Per + n - 1) / n
}

// String is the rate as --restart-rate takes it: "10/1m", "0" for no
// limit.
func (r Rate) String() string {
	if r.Unlimited() {
		return "0"
	}
	return strconv.Itoa(r.Count) + "/" + shortDuration(r.Per)
}

// Text is the rate in words: "10 restarts in any 1m".
func (r Rate) Text() string {
	if r.Unlimited() {
		return "no limit"
	}
	noun := "restarts"
	if r.Count == 1 {
		noun = "restart"
	}
	return fmt.Sprintf("%d %s in any %s", r.Count, noun, shortDuration(r.Per))
}

// shortDuration drops the zero units Duration.String ends with: "1m", not
// "1m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseRate reads a --restart-rate: "N/D" is at most N restarts in any
// window D (a Go duration: "10/1m", "1/30s"); a number alone is per
// minute ("10" is "10/1m"; a fraction such as "2.5" is spaced as 2.5 a
// minute, "1/24s"); 0 means no limit.
func ParseRate(s string) (Rate, error) {
	count, per, windowed := strings.Cut(strings.TrimSpace(s), "/")
	if !windowed {
		x, err := strconv.ParseFloat(count, 64)
		if err != nil || !(x >= 0) || x > 1e9 || (x > 0 && x < 1e-4) {
			return Rate{}, fmt.Errorf("%q: write N/D, at most N restarts in any window D, such as 10/1m or 1/30s; or a number of restarts a minute; 0 for no limit", s)
		}
		if x == 0 {
			return Rate{}, nil
		}
		if x == float64(int(x)) {
			return Rate{Count: int(x), Per: time.Minute}, nil
		}
		return Rate{Count: 1, Per: time.Duration(float64(time.Minute) / x)}, nil
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 0 {
		return Rate{}, fmt.Errorf("%q: N in N/D is a whole number of restarts, 0 or more (0: no limit), such as 10/1m", s)
	}
	d, err := time.ParseDuration(per)
	if err != nil || d <= 0 {
		return Rate{}, fmt.Errorf("%q: D in N/D is a Go duration above 0, such as 1m or 30s", s)
	}
	if n == 0 {
		return Rate{}, nil
	}
	return Rate{Count: n, Per: d}, nil
}
