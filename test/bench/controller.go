package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// controller is a `watchword controller` process.
type controller struct {
	cmd     *exec.Cmd
	metrics string
}

// logFile receives the controllers' logs.
var logFile = os.Stderr

// goMemLimit, if set, is the controller's GOMEMLIMIT (only its own).
var goMemLimit string

// workers, if set, is the controller's --workers.
var workers int

// pprofAddr, if set, is where the controller serves its profiles.
var pprofAddr string

// statusPeriod, if set, is the controllers' --status-refresh-period.
var statusPeriod time.Duration

// controllerLogLevel is the controllers' --log-level.
var controllerLogLevel = "error"

// watchList, if set, is client-go's WatchListClient feature gate in the
// controller ("true": its caches fill from streaming lists; "false":
// from paginated lists), through client-go's environment override.
var watchList string

// controllerFlags are more flags of the controller, separated by spaces.
var controllerFlags string

// leaseNamespace holds the controllers' leader election lease: they run
// with leader election, so that a restart can be timed from the moment
// the new process takes the lease.
const leaseNamespace = "default"

func startController(bin, kubeconfig string) (*controller, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	args := []string{"controller", "--kubeconfig", kubeconfig, "--metrics-bind-address", addr,
		"--health-probe-bind-address", "0", "--log-level", controllerLogLevel,
		"--leader-elect", "--leader-election-namespace", leaseNamespace}
	if workers > 0 {
		args = append(args, "--workers", fmt.Sprint(workers))
	}
	if statusPeriod > 0 {
		args = append(args, "--status-refresh-period", statusPeriod.String())
	}
	if pprofAddr != "" {
		args = append(args, "--pprof-bind-address", pprofAddr)
	}
	args = append(args, strings.Fields(controllerFlags)...)
	if bareOperator {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		bin, args = self, []string{bareOperatorArg, "--kubeconfig", kubeconfig, "--metrics-bind-address", addr}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	if goMemLimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+goMemLimit)
	}
	if watchList != "" {
		cmd.Env = append(cmd.Env, "KUBE_FEATURE_WatchListClient="+watchList)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	c := &controller{cmd: cmd, metrics: "http://" + addr + "/metrics"}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := c.scrape(); err == nil {
			return c, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.stop()
	return nil, fmt.Errorf("the controller's metrics endpoint did not answer")
}

func (c *controller) stop() {
	_ = c.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// peakRSS is the process's high-water resident set size, in MiB.
func (c *controller) peakRSS() float64 { return c.status("VmHWM:") }

// rss is the process's resident set size now, in MiB.
func (c *controller) rss() float64 { return c.status("VmRSS:") }

// status reads a size in kB from /proc/PID/status, in MiB.
func (c *controller) status(field string) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), field) {
			kb, _ := strconv.ParseFloat(strings.Fields(s.Text())[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// scrape returns the controller's metrics.
func (c *controller) scrape() (metrics, error) {
	resp, err := http.Get(c.metrics)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseMetrics(resp.Body)
}

// metrics maps a sample's name and labels (as printed) to its value.
type metrics map[string]float64

func parseMetrics(r io.Reader) (metrics, error) {
	out := metrics{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, s.Err()
}

// sum adds every sample whose name is name and whose labels contain every
// fragment.
func (m metrics) sum(name string, fragments ...string) float64 {
	total := 0.0
	for k, v := range m {
		if sampleOf(k, name, fragments) {
			total += v
		}
	}
	return total
}

// since is how much sum(name, fragments...) grew from before to m.
func (m metrics) since(before metrics, name string, fragments ...string) float64 {
	return m.sum(name, fragments...) - before.sum(name, fragments...)
}

// sinceBy is, for each value of label whose samples grew from before to
// m, how much they grew (see by).
func (m metrics) sinceBy(before metrics, name, label string, fragments ...string) map[string]float64 {
	was := before.by(name, label, fragments...)
	out := map[string]float64{}
	for value, v := range m.by(name, label, fragments...) {
		if d := v - was[value]; d > 0 {
			out[value] = d
		}
	}
	return out
}

// sampleOf tells whether the sample k is one of name whose labels contain
// every fragment.
func sampleOf(k, name string, fragments []string) bool {
	if k != name && !strings.HasPrefix(k, name+"{") {
		return false
	}
	for _, f := range fragments {
		if !strings.Contains(k, f) {
			return false
		}
	}
	return true
}

// by sums, like sum, the samples of name whose labels contain every
// fragment, grouped by the value of one label.
func (m metrics) by(name, label string, fragments ...string) map[string]float64 {
	out := map[string]float64{}
	key := label + `="`
	for k, v := range m {
		if !sampleOf(k, name, fragments) {
			continue
		}
		value := ""
		if i := strings.Index(k, key); i >= 0 {
			rest := k[i+len(key):]
			value = rest[:strings.IndexByte(rest, '"')]
		}
		out[value] += v
	}
	return out
}
