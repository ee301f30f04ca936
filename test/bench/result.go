package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

type result struct {
	Machine              string             `json:"machine"`
	Config               config             `json:"config"`
	RawCreatesPerSec     float64            `json:"raw_secret_creates_per_sec"`
	ESCreatesPerSec      float64            `json:"externalsecret_creates_per_sec_alone"`
	StatusUpdatesPerSec  float64            `json:"externalsecret_status_updates_per_sec_alone"`
	Bound                float64            `json:"three_write_bound_per_sec"`
	FractionOfBound      float64            `json:"fraction_of_three_write_bound"`
	SyncSeconds          float64            `json:"sync_seconds"`
	SyncedPerSec         float64            `json:"externalsecrets_synced_per_sec"`
	FractionOfLimit      float64            `json:"fraction_of_limit"`
	AllSynced            bool               `json:"all_synced"`
	WrongData            int                `json:"wrong_data"`
	ProviderCallsSync    float64            `json:"provider_calls_during_sync"`
	BatchCallsSync       float64            `json:"provider_batch_calls_during_sync"`
	PeakRSSMiB           float64            `json:"controller_peak_rss_mib"`
	IdleRSSMiB           float64            `json:"controller_rss_mib_before_sync"`
	CPUSecondsSync       map[string]float64 `json:"cpu_seconds_during_sync"`
	APIRequestsByVerb    map[string]float64 `json:"apiserver_requests_by_verb_during_sync"`
	CallsPerCycle        float64            `json:"provider_calls_per_refresh_cycle"`
	BatchCallsPerCycle   float64            `json:"provider_batch_calls_per_refresh_cycle"`
	VersionCallsPerCycle float64            `json:"provider_version_checks_per_refresh_cycle"`
	RefreshMeanPerSec    float64            `json:"refresh_syncs_mean_per_sec"`
	RefreshBusiestSec    float64            `json:"refresh_syncs_busiest_sec"`
	BusiestOverMean      float64            `json:"busiest_over_mean"`
	NewESSecondsFanOut   float64            `json:"new_externalsecret_sync_seconds_while_all_due"`
	NewESSecondsDuring   float64            `json:"new_externalsecret_sync_seconds_during_restart"`
	RestartCalls         float64            `json:"provider_calls_in_restart_window"`
	RestartWrites        float64            `json:"target_writes_in_restart_window"`
	RestartPeakRSSMiB    float64            `json:"restarted_controller_peak_rss_mib"`
	// RestartStatusWrites are the ExternalSecret status writes in the
	// restart window, but the new ExternalSecret's.
	RestartStatusWrites float64 `json:"status_writes_in_restart_window"`
	// The steady-state window with nothing changing: the API server's
	// writes per minute, by verb and by resource (all clients: the API
	// server's own lease renewals are among them), those to Watchword's
	// resources (ExternalSecrets, Secrets, events), and the target.
	SteadyMinutes                float64            `json:"steady_window_minutes"`
	SteadyWritesPerMin           float64            `json:"steady_api_writes_per_min"`
	SteadyWritesPerMinByVerb     map[string]float64 `json:"steady_api_writes_per_min_by_verb"`
	SteadyWritesPerMinByResource map[string]float64 `json:"steady_api_writes_per_min_by_resource"`
	SteadyWatchwordWritesPerMin  float64            `json:"steady_watchword_writes_per_min"`
	SteadyInFirstPeriod          bool               `json:"steady_window_in_first_status_period"`
	SteadyTargetPerMin           float64            `json:"steady_watchword_writes_per_min_target"`
}

func (r *result) print(w io.Writer) {
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	c := r.Config
	fmt.Fprintf(t, "machine\t%s\n", r.Machine)
	fmt.Fprintf(t, "setup\t%d ExternalSecrets, %d keys, %d unrelated Secrets, store %s, %s provider latency (fake store only), refresh %s\n", c.N, c.Keys, c.Unrelated, c.Store, c.Latency, c.Refresh)
	fmt.Fprintf(t, "raw limit R (Secret creates/s, %d parallel)\t%.0f\n", c.Parallel, r.RawCreatesPerSec)
	fmt.Fprintf(t, "time until every target has the right data\t%.1f s\n", r.SyncSeconds)
	fmt.Fprintf(t, "ExternalSecret creates/s alone (E), status updates/s alone (U)\t%.0f, %.0f\n", r.ESCreatesPerSec, r.StatusUpdatesPerSec)
	fmt.Fprintf(t, "three-write bound 1/(1/E + 1/R + 1/U)\t%.0f ExternalSecrets/s (R/3 = %.0f)\n", r.Bound, r.RawCreatesPerSec/3)
	fmt.Fprintf(t, "ExternalSecrets synced per second\t%.0f (%.2f of R/3, target >= 0.67; %.2f of the three-write bound)\n", r.SyncedPerSec, r.FractionOfLimit, r.FractionOfBound)
	fmt.Fprintf(t, "targets with wrong data\t%d\n", r.WrongData)
	fmt.Fprintf(t, "provider calls during the sync: single reads, batch reads\t%.0f, %.0f\n", r.ProviderCallsSync, r.BatchCallsSync)
	fmt.Fprintf(t, "controller peak RSS\t%.0f MiB (target <= 150); %.0f MiB before the sync\n", r.PeakRSSMiB, r.IdleRSSMiB)
	fmt.Fprintf(t, "CPU seconds during the sync\t%s\n", joinSorted(r.CPUSecondsSync, "%s %.1f"))
	fmt.Fprintf(t, "apiserver requests during the sync\t%s\n", joinSorted(r.APIRequestsByVerb, "%s %.0f"))
	fmt.Fprintf(t, "provider calls per refresh cycle: single reads, batch reads, version checks\t%.0f, %.0f, %.0f (unique keys: %d)\n", r.CallsPerCycle, r.BatchCallsPerCycle, r.VersionCallsPerCycle, c.Keys)
	fmt.Fprintf(t, "refresh syncs per second: mean, busiest\t%.1f, %.0f (busiest/mean %.2f; target <= 2)\n", r.RefreshMeanPerSec, r.RefreshBusiestSec, r.BusiestOverMean)
	if r.SteadyMinutes > 0 {
		first := "after the first status period"
		if r.SteadyInFirstPeriod {
			first = "within the first status period after the sync"
		}
		fmt.Fprintf(t, "steady state, nothing changing (%.1f min, %s): API writes/min by verb\t%s (all clients)\n", r.SteadyMinutes, first, joinSorted(r.SteadyWritesPerMinByVerb, "%s %.1f"))
		fmt.Fprintf(t, "… by resource\t%s\n", joinSorted(r.SteadyWritesPerMinByResource, "%s %.1f"))
		fmt.Fprintf(t, "… to ExternalSecrets, Secrets and events\t%.1f/min (target <= %.0f)\n", r.SteadyWatchwordWritesPerMin, r.SteadyTargetPerMin)
	}
	if c.Store == storeFake {
		fmt.Fprintf(t, "new ExternalSecret synced while all %d are due\t%.2f s (target <= 2)\n", c.N, r.NewESSecondsFanOut)
	} else {
		fmt.Fprintf(t, "new ExternalSecret synced while all %d are due\tnot measured (needs -store fake)\n", c.N)
	}
	fmt.Fprintf(t, "new ExternalSecret synced as the controller restarts\t%.2f s (includes the cache sync)\n", r.NewESSecondsDuring)
	fmt.Fprintf(t, "after restart, in %s: provider calls, target writes, status writes\t%.0f, %.0f, %.0f\n", c.RestartWindow, r.RestartCalls, r.RestartWrites, r.RestartStatusWrites)
	fmt.Fprintf(t, "restarted controller peak RSS\t%.0f MiB\n", r.RestartPeakRSSMiB)
	t.Flush()
}

// joinSorted prints a map's entries in key order.
func joinSorted(m map[string]float64, format string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf(format, k, m[k])
	}
	return strings.Join(parts, ", ")
}
