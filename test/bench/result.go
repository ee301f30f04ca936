package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

type result struct {
	Machine             string             `json:"machine"`
	Config              config             `json:"config"`
	RawCreatesPerSec    float64            `json:"raw_secret_creates_per_sec"`
	ESCreatesPerSec     float64            `json:"externalsecret_creates_per_sec_alone"`
	StatusUpdatesPerSec float64            `json:"externalsecret_status_updates_per_sec_alone"`
	Bound               float64            `json:"three_write_bound_per_sec"`
	FractionOfBound     float64            `json:"fraction_of_three_write_bound"`
	SyncSeconds         float64            `json:"sync_seconds"`
	SyncedPerSec        float64            `json:"externalsecrets_synced_per_sec"`
	FractionOfLimit     float64            `json:"fraction_of_limit"`
	AllSynced           bool               `json:"all_synced"`
	WrongData           int                `json:"wrong_data"`
	ProviderCallsSync   float64            `json:"provider_calls_during_sync"`
	BatchCallsSync      float64            `json:"provider_batch_calls_during_sync"`
	PeakRSSMiB          float64            `json:"controller_peak_rss_mib"`
	IdleRSSMiB          float64            `json:"controller_rss_mib_before_sync"`
	CPUSecondsSync      map[string]float64 `json:"cpu_seconds_during_sync"`
	// The API server's CPU milliseconds per write of each kind, alone,
	// and per ExternalSecret during the sync.
	APIServerMsAlone  map[string]float64 `json:"apiserver_cpu_ms_per_write_alone"`
	APIServerMsSync   float64            `json:"apiserver_cpu_ms_per_externalsecret_during_sync"`
	APIRequestsByVerb map[string]float64 `json:"apiserver_requests_by_verb_during_sync"`

	// The watch events the API server sent during the sync, by resource:
	// how many, and their encoded size in KiB.
	WatchEventsByResource   map[string]float64 `json:"apiserver_watch_events_by_resource_during_sync"`
	WatchEventKiBByResource map[string]float64 `json:"apiserver_watch_event_kib_by_resource_during_sync"`
	// The watchers the API server closed during the sync because they did
	// not keep up with their events, by resource.
	WatchersTerminatedByResource map[string]float64 `json:"apiserver_watchers_closed_unresponsive_by_resource_during_sync"`
	// How long the controller's requests waited for its client-side rate
	// limit during the sync, in all, and how many waited over 1 ms.
	ClientWaitSecondsSync float64 `json:"controller_client_rate_limit_wait_seconds_during_sync"`
	ClientWaitedSync      float64 `json:"controller_requests_waited_over_1ms_during_sync"`
	// ClientWaitLongestSync is the least bucket bound, in seconds, of
	// rest_client_rate_limiter_duration_seconds under which every wait of
	// the sync fell ("none": no request measured).
	ClientWaitLongestSync string `json:"controller_client_rate_limit_longest_wait_at_most_seconds_during_sync"`

	CallsPerCycle        float64 `json:"provider_calls_per_refresh_cycle"`
	BatchCallsPerCycle   float64 `json:"provider_batch_calls_per_refresh_cycle"`
	VersionCallsPerCycle float64 `json:"provider_version_checks_per_refresh_cycle"`
	RefreshMeanPerSec    float64 `json:"refresh_syncs_mean_per_sec"`
	RefreshBusiestSec    float64 `json:"refresh_syncs_busiest_sec"`
	BusiestOverMean      float64 `json:"busiest_over_mean"`
	NewESSecondsFanOut   float64 `json:"new_externalsecret_sync_seconds_while_all_due"`
	NewESSecondsDuring   float64 `json:"new_externalsecret_sync_seconds_during_restart"`
	// The takeover by a standby replica: when it took the lease after
	// the leader was stopped, and when a new ExternalSecret created then
	// was synced, from the lease and from its creation.
	TakeoverLeaseSeconds    float64 `json:"takeover_lease_taken_seconds_after_leader_stopped"`
	TakeoverNewESAfterLease float64 `json:"takeover_new_externalsecret_synced_seconds_after_lease"`
	TakeoverNewESSeconds    float64 `json:"takeover_new_externalsecret_sync_seconds"`
	StandbyPeakRSSMiB       float64 `json:"standby_peak_rss_mib"`
	FanOutSeconds           float64 `json:"fanout_seconds_waited"`
	// LeaseSeconds is when the restarted controller took the lease, and
	// NewESAfterLease when the new ExternalSecret was synced, both from
	// the process start; the second from the lease is what the target
	// (2 s) bounds.
	LeaseSeconds    float64 `json:"restart_lease_taken_seconds"`
	NewESAfterLease float64 `json:"new_externalsecret_synced_seconds_after_lease"`
	// RestartLists are the API server's LIST requests in the restart
	// window, by resource, and RestartAPICPU its CPU seconds then.
	RestartLists      map[string]float64 `json:"restart_lists_by_resource"`
	RestartAPICPU     float64            `json:"restart_apiserver_cpu_seconds"`
	RestartCalls      float64            `json:"provider_calls_in_restart_window"`
	RestartWrites     float64            `json:"target_writes_in_restart_window"`
	RestartPeakRSSMiB float64            `json:"restarted_controller_peak_rss_mib"`
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
	// EventsSync are the events written during the sync (one first-sync
	// event is made per ExternalSecret; the rest were dropped or are
	// still queued in the event recorder).
	EventsSync float64 `json:"events_written_during_sync"`
	// SteadyEvents are the events written in the window, by type and
	// reason, and whether they report work of the window or older.
	SteadyEvents        map[string]float64 `json:"steady_events_by_reason"`
	SteadyInFirstPeriod bool               `json:"steady_window_in_first_status_period"`
	SteadyTargetPerMin  float64            `json:"steady_watchword_writes_per_min_target"`
}

// rssTarget is the controller's peak RSS target in MiB for n
// ExternalSecrets: 150 up to 10,000 (the first round of scale work), 600
// at 100,000 (the second), and in between in proportion.
func rssTarget(n int) int {
	if n <= 10000 {
		return 150
	}
	return 150 + (min(n, 100000)-10000)*450/90000
}

func (r *result) print(w io.Writer) {
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	c := r.Config
	fmt.Fprintf(t, "machine\t%s\n", r.Machine)
	latency := c.Latency.String()
	if c.Store == storeAWS && c.LatencyMax > c.Latency {
		latency += "-" + c.LatencyMax.String()
	}
	fmt.Fprintf(t, "setup\t%d ExternalSecrets, %d keys, %d unrelated Secrets, store %s, %s provider latency (fake and aws stores), refresh %s\n", c.N, c.Keys, c.Unrelated, c.Store, latency, c.Refresh)
	fmt.Fprintf(t, "raw limit R (Secret creates/s, %d parallel)\t%.0f\n", c.Parallel, r.RawCreatesPerSec)
	fmt.Fprintf(t, "time until every target has the right data\t%.1f s\n", r.SyncSeconds)
	fmt.Fprintf(t, "ExternalSecret creates/s alone (E), status updates/s alone (U)\t%.0f, %.0f\n", r.ESCreatesPerSec, r.StatusUpdatesPerSec)
	fmt.Fprintf(t, "three-write bound 1/(1/E + 1/R + 1/U)\t%.0f ExternalSecrets/s (R/3 = %.0f)\n", r.Bound, r.RawCreatesPerSec/3)
	fmt.Fprintf(t, "ExternalSecrets synced per second\t%.0f (%.2f of R/3, target >= 0.67; %.2f of the three-write bound)\n", r.SyncedPerSec, r.FractionOfLimit, r.FractionOfBound)
	fmt.Fprintf(t, "targets with wrong data\t%d\n", r.WrongData)
	fmt.Fprintf(t, "provider calls during the sync: single reads, batch reads\t%.0f, %.0f\n", r.ProviderCallsSync, r.BatchCallsSync)
	fmt.Fprintf(t, "controller peak RSS\t%.0f MiB (target <= %d); %.0f MiB before the sync\n", r.PeakRSSMiB, rssTarget(c.N), r.IdleRSSMiB)
	fmt.Fprintf(t, "CPU seconds during the sync\t%s\n", joinSorted(r.CPUSecondsSync, "%s %.1f"))
	alone := 0.0
	for _, ms := range r.APIServerMsAlone {
		alone += ms
	}
	fmt.Fprintf(t, "API server CPU ms per ExternalSecret: during the sync; its three writes alone\t%.2f; %.2f (%s)\n", r.APIServerMsSync, alone, joinSorted(r.APIServerMsAlone, "%s %.2f"))
	fmt.Fprintf(t, "apiserver requests during the sync\t%s\n", joinSorted(r.APIRequestsByVerb, "%s %.0f"))
	many, kib := map[string]float64{}, map[string]float64{}
	for resource, n := range r.WatchEventsByResource {
		if n >= 100 {
			many[resource], kib[resource] = n, r.WatchEventKiBByResource[resource]
		}
	}
	fmt.Fprintf(t, "watch events sent during the sync, resources with 100 or more: count; KiB\t%s; %s\n", joinSorted(many, "%s %.0f"), joinSorted(kib, "%s %.0f"))
	fmt.Fprintf(t, "watchers the API server closed during the sync for not keeping up\t%s\n", orNone(joinSorted(r.WatchersTerminatedByResource, "%s %.0f")))
	if c.Operator != operatorBare {
		fmt.Fprintf(t, "controller's requests held by its client-side rate limit during the sync (rest_client_rate_limiter_duration_seconds)\t%.0f over 1 ms, %.1f s waited in all, the longest at most %s s\n", r.ClientWaitedSync, r.ClientWaitSecondsSync, r.ClientWaitLongestSync)
	}
	fmt.Fprintf(t, "events written during the sync\t%.0f (one first-sync event made per ExternalSecret)\n", r.EventsSync)
	if c.Operator == operatorBare {
		fmt.Fprintf(t, "operator\tbare: the sync alone, by the least any operator does (nothing after it measured)\n")
		t.Flush()
		return
	}
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
		if len(r.SteadyEvents) > 0 {
			fmt.Fprintf(t, "… events written in the window, by type and reason\t%s\n", joinSorted(r.SteadyEvents, "%s: %.0f"))
		}
	}
	if c.Store == storeFake {
		fmt.Fprintf(t, "new ExternalSecret synced while all %d are due\t%.2f s (target <= 2)\n", c.N, r.NewESSecondsFanOut)
	} else {
		fmt.Fprintf(t, "new ExternalSecret synced while all %d are due\tnot measured (needs -store fake)\n", c.N)
	}
	fmt.Fprintf(t, "new ExternalSecret synced as the controller restarts\t%.2f s from the process start (includes the cache sync)\n", r.NewESSecondsDuring)
	fmt.Fprintf(t, "… lease taken, new ExternalSecret synced after it\t%.2f s from the start; %.2f s after the lease (target <= 2)\n", r.LeaseSeconds, r.NewESAfterLease)
	fmt.Fprintf(t, "… API server: LIST requests by resource, CPU seconds in the window\t%s; %.1f\n", joinSorted(r.RestartLists, "%s %.0f"), r.RestartAPICPU)
	fmt.Fprintf(t, "after restart, in %s: provider calls, target writes, status writes\t%.0f, %.0f, %.0f\n", c.RestartWindow, r.RestartCalls, r.RestartWrites, r.RestartStatusWrites)
	fmt.Fprintf(t, "restarted controller peak RSS\t%.0f MiB\n", r.RestartPeakRSSMiB)
	if c.StandbyWarmup > 0 {
		fmt.Fprintf(t, "standby takeover: lease taken after the leader stopped; new ExternalSecret synced after the lease\t%.2f s; %.2f s (target <= 2; %.2f s from its creation)\n", r.TakeoverLeaseSeconds, r.TakeoverNewESAfterLease, r.TakeoverNewESSeconds)
		fmt.Fprintf(t, "standby peak RSS\t%.0f MiB\n", r.StandbyPeakRSSMiB)
	}
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

// orNone is s, or "none" if it is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
