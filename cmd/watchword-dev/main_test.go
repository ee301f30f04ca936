package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/watchword-dev/watchword/internal/operator"
)

func TestParse(t *testing.T) {
	o, level, console, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.WorkDir != ".watchword-dev" || o.Timeout != 0 || o.ExitAfterDemo || level != zapcore.InfoLevel || console {
		t.Errorf("defaults: %+v, level %v, console %v", o, level, console)
	}
	if o.Operator.MetricsAddr != "0" || o.Operator.HealthAddr != "0" || o.Operator.Registry["fake"] == nil || o.Operator.Workers != operator.DefaultOptions().Workers {
		t.Errorf("operator options %+v", o.Operator)
	}
	o, _, _, err = parse([]string{"--exit-after-demo", "--timeout", "5m", "--workdir", "x"}, io.Discard)
	if err != nil || !o.ExitAfterDemo || o.Timeout != 5*time.Minute || o.WorkDir != "x" {
		t.Errorf("options %+v, error %v", o, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "-1m"}, "--timeout -1m0s: use a duration above 0"},
		{[]string{"--log-level", "warn"}, "use debug, info or error"},
		{[]string{"--workdir", ""}, "--workdir is empty"},
		{[]string{"demo"}, `unexpected argument "demo"`},
	} {
		if _, _, _, err := parse(c.args, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parse(%q) = %v, want an error with %q", c.args, err, c.want)
		}
	}
}
