package restart

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// The annotations of a maintenance window.
const (
	// WindowAnnotation is a cron expression of when the workload's
	// maintenance window opens, five fields (minute, hour, day of month,
	// month, day of week; or six, seconds first) or a descriptor such as
	// @daily, optionally after CRON_TZ=<IANA zone>; without
	// a zone it is UTC. Restarts wait for the window.
	WindowAnnotation = "watchword.io/restart-window"
	// WindowDurationAnnotation is how long the window stays open, a Go
	// duration; DefaultWindowDuration without it.
	WindowDurationAnnotation = "watchword.io/restart-window-duration"
)

// DefaultWindowDuration is how long a window stays open without
// WindowDurationAnnotation.
const DefaultWindowDuration = time.Hour

// parser reads the standard five fields, or six with seconds first, and
// descriptors such as @daily.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// windowExample is the example the errors give.
const windowExample = `"CRON_TZ=Europe/Berlin 0 2 * * 1-5" (weekdays from 02:00, Berlin time)`

// Window is a workload's maintenance window: it opens at each time of a
// cron schedule and stays open for a duration. The schedule is parsed by
// robfig/cron, the cron parser most Go projects use.
type Window struct {
	spec   string
	sched  cron.Schedule
	length time.Duration
}

// ParseWindow reads the window annotations: spec is the value of
// WindowAnnotation and length that of WindowDurationAnnotation. No spec
// is no window (nil), whatever length says. The error names the
// annotation at fault, what is wrong and what to write.
func ParseWindow(spec, length string) (*Window, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	d := DefaultWindowDuration
	if length != "" {
		var err error
		if d, err = time.ParseDuration(length); err != nil || d <= 0 {
			return nil, fmt.Errorf("%s %q is not a positive duration: write a Go duration such as \"2h\" or \"30m\"; restarts wait until it is fixed", WindowDurationAnnotation, length)
		}
	}
	bad := func(why string) error {
		return fmt.Errorf("%s %q %s: write when the window opens as a cron expression of five fields, such as %s, with %s saying how long it stays open (default %s); restarts wait until it is fixed",
			WindowAnnotation, spec, why, windowExample, WindowDurationAnnotation, DefaultWindowDuration)
	}
	// The parser slices up to the first space after a zone prefix, and
	// panics when there is none.
	if (strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=")) && !strings.Contains(spec, " ") {
		return nil, bad("has a time zone but no schedule")
	}
	// @every is a period, not a time of day: it opens no window.
	if strings.Contains(spec, "@every") {
		return nil, bad("uses @every, which has no time at which a window opens")
	}
	sched, err := parser.Parse(spec)
	if err != nil {
		return nil, bad("does not parse (" + err.Error() + ")")
	}
	w := &Window{spec: spec, sched: sched, length: d}
	if sched.Next(time.Now().UTC()).IsZero() {
		return nil, bad("never opens")
	}
	return w, nil
}

// Open tells whether the window is open at now; when it is not, opens is
// when it next opens (zero if never: a schedule with no time in the next
// years). No window (nil) is always open.
func (w *Window) Open(now time.Time) (open bool, opens time.Time) {
	if w == nil {
		return true, time.Time{}
	}
	// The first opening after now-length is open at now if it is not
	// after now; otherwise it is the next opening.
	t := w.sched.Next(now.UTC().Add(-w.length))
	if t.IsZero() {
		return false, t
	}
	return !t.After(now), t
}

// String names the window as the annotations give it.
func (w *Window) String() string {
	return fmt.Sprintf("%q for %s", w.spec, w.length)
}
