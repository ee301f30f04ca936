// Package agent is `watchword agent`: it delivers secrets as files into
// directories, atomically, for workloads that must not use Kubernetes
// Secrets. It reuses the engine (one shared Fetcher, templates, versions)
// and the providers of the controller; what is its own is the config file,
// the atomic writer, the refresh loop and the onChange action.
// docs/agent.md describes it for users.
package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Config is the agent's config file (kind AgentConfig). docs/agent.md is
// its schema, field by field.
type Config struct {
	// Kind must be AgentConfig.
	Kind string `json:"kind"`
	// RefreshInterval is how often every delivery is refreshed (±10%
	// jitter). Default 1m.
	RefreshInterval *metav1.Duration `json:"refreshInterval,omitempty"`
	// Stores are the stores read from, by name, each with one provider
	// block spelled as in SecretStore.spec.
	Stores []Store `json:"stores,omitempty"`
	// Credentials are files standing for the Kubernetes objects that a
	// store's provider block names (a Secret key, a ConfigMap key).
	Credentials []Credential `json:"credentials,omitempty"`
	// ServiceAccountTokenFile is the projected service-account token used
	// where a provider block names a service account (Vault Kubernetes or
	// JWT auth). Default: the pod's own token.
	ServiceAccountTokenFile string `json:"serviceAccountTokenFile,omitempty"`
	// Deliveries are the target directories.
	Deliveries []Delivery `json:"deliveries,omitempty"`
	// Kubernetes makes the agent follow ExternalSecrets of the cluster it
	// runs in instead of (or besides) Deliveries.
	Kubernetes *KubernetesSource `json:"kubernetes,omitempty"`
}

// Store is one store: a name and one provider block.
type Store struct {
	Name                         string `json:"name"`
	v1alpha1.SecretStoreProvider `json:",inline"`
}

// Credential maps an object named in a provider block to a file.
type Credential struct {
	// Secret and ConfigMap name the object as the provider block does;
	// exactly one is set.
	Secret    string `json:"secret,omitempty"`
	ConfigMap string `json:"configMap,omitempty"`
	// Key is the key of the object.
	Key string `json:"key"`
	// File holds the value.
	File string `json:"file"`
}

// Delivery is one target directory and what goes into it.
type Delivery struct {
	// Directory is where the files appear. The agent owns it: it holds
	// the visible files (links), ..data and the timestamped directories.
	Directory string `json:"directory"`
	// Store names an entry of stores.
	Store string `json:"store"`
	// Files are the files read from the store: a file name and a remote
	// object.
	Files []File `json:"files,omitempty"`
	// Template, when set, renders files over the read ones (.data.NAME),
	// with the functions of ExternalSecret templates.
	Template *Template `json:"template,omitempty"`
	// Mode of every file, octal. Default "0640".
	Mode string `json:"mode,omitempty"`
	// Owner and Group of every file, a name or a number. Default: the
	// agent's own.
	Owner string `json:"owner,omitempty"`
	Group string `json:"group,omitempty"`
	// OnChange runs after the files changed (not on the first delivery
	// of a process unless they differ from what was on disk).
	OnChange *Action `json:"onChange,omitempty"`
}

// File is one file read from a remote object.
type File struct {
	Name      string                   `json:"name"`
	RemoteRef v1alpha1.RemoteReference `json:"remoteRef"`
}

// Template renders files.
type Template struct {
	// Data maps a file name to a Go text/template.
	Data map[string]string `json:"data"`
	// MergePolicy: Replace (default; only the templated files) or Merge
	// (the read files too).
	MergePolicy v1alpha1.TemplateMergePolicy `json:"mergePolicy,omitempty"`
}

// Action is what runs after a change: a command, or a signal.
type Action struct {
	// Command is run without a shell, argv style.
	Command []string `json:"command,omitempty"`
	// Signal (such as HUP) is sent to the process whose pid is in
	// PidFile, or to every process named Process.
	Signal  string `json:"signal,omitempty"`
	PidFile string `json:"pidFile,omitempty"`
	Process string `json:"process,omitempty"`
}

// KubernetesSource follows ExternalSecrets with creationPolicy None.
type KubernetesSource struct {
	// Namespace of the ExternalSecrets and their SecretStores. Default:
	// the pod's own.
	Namespace string `json:"namespace,omitempty"`
	// ExternalSecrets to follow, each into its directory.
	ExternalSecrets []FollowedExternalSecret `json:"externalSecrets"`
}

// FollowedExternalSecret is one ExternalSecret and where its data goes.
type FollowedExternalSecret struct {
	Name      string  `json:"name"`
	Directory string  `json:"directory"`
	Mode      string  `json:"mode,omitempty"`
	Owner     string  `json:"owner,omitempty"`
	Group     string  `json:"group,omitempty"`
	OnChange  *Action `json:"onChange,omitempty"`
}

// The defaults.
const (
	DefaultRefreshInterval = time.Minute
	DefaultMode            = "0640"
	DefaultTokenFile       = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	// maxConfigSize bounds the config file.
	maxConfigSize = 1 << 20
)

// ConfigError lists every problem of a config file, each naming its place.
type ConfigError struct {
	File     string
	Problems []string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("config %s: %d problem(s):\n  %s", e.File, len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// LoadConfig reads and checks a config file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	return ParseConfig(path, b)
}

// ParseConfig decodes a config strictly and checks it. Unknown fields and
// repeated keys are errors naming their path; every problem is listed at
// once, in a *ConfigError. Problems never quote a value of the file.
func ParseConfig(name string, b []byte) (*Config, error) {
	if len(b) > maxConfigSize {
		return nil, &ConfigError{File: name, Problems: []string{fmt.Sprintf("the file is larger than %d bytes", maxConfigSize)}}
	}
	var problems []string
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(b, &doc); err != nil {
		return nil, &ConfigError{File: name, Problems: []string{"not valid YAML: " + err.Error()}}
	}
	problems = append(problems, duplicateKeys(&doc, "")...)
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, &ConfigError{File: name, Problems: append(problems, "not valid YAML: "+err.Error())}
	}
	cfg := &Config{}
	strict, err := sigsjson.UnmarshalStrict(js, cfg, sigsjson.DisallowUnknownFields)
	for _, s := range strict {
		problems = append(problems, s.Error())
	}
	if err != nil {
		// A type error: its text names the field and the Go type.
		problems = append(problems, err.Error())
	} else {
		// The checks run on what did decode, so that every problem is
		// listed at once.
		problems = append(problems, cfg.check()...)
	}
	if len(problems) > 0 {
		return nil, &ConfigError{File: name, Problems: problems}
	}
	cfg.defaults()
	return cfg, nil
}

// duplicateKeys walks the YAML tree and names every key that a mapping
// repeats, by its path and line.
func duplicateKeys(n *yamlv3.Node, path string) []string {
	var out []string
	switch n.Kind {
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			out = append(out, duplicateKeys(c, path)...)
		}
	case yamlv3.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if line, ok := seen[k.Value]; ok {
				out = append(out, fmt.Sprintf("%s: repeated key (line %d, first at line %d)", p, k.Line, line))
			} else {
				seen[k.Value] = k.Line
			}
			out = append(out, duplicateKeys(n.Content[i+1], p)...)
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			out = append(out, duplicateKeys(c, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

// check lists what is wrong with a decoded config.
func (c *Config) check() []string {
	var p []string
	bad := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if c.Kind != "AgentConfig" {
		bad("kind: must be AgentConfig")
	}
	if c.RefreshInterval != nil && c.RefreshInterval.Duration < time.Second {
		bad("refreshInterval: must be at least 1s")
	}
	if len(c.Deliveries) == 0 && c.Kubernetes == nil {
		bad("deliveries: at least one delivery (or kubernetes) is required")
	}
	stores := map[string]bool{}
	for i, s := range c.Stores {
		at := fmt.Sprintf("stores[%d]", i)
		switch {
		case s.Name == "":
			bad("%s.name: required", at)
		case stores[s.Name]:
			bad("%s.name: store %q is defined twice", at, s.Name)
		}
		stores[s.Name] = true
		if n := len(provider.SetBlocks(&s.SecretStoreProvider)); n != 1 {
			bad("%s: exactly one provider block (such as vault) must be set, found %d", at, n)
		}
	}
	for i, cr := range c.Credentials {
		at := fmt.Sprintf("credentials[%d]", i)
		if (cr.Secret == "") == (cr.ConfigMap == "") {
			bad("%s: set exactly one of secret or configMap", at)
		}
		if cr.Key == "" {
			bad("%s.key: required", at)
		}
		if cr.File == "" {
			bad("%s.file: required", at)
		}
	}
	dirs := map[string]string{}
	useDir := func(at, dir string) {
		if dir == "" {
			bad("%s.directory: required", at)
			return
		}
		if !filepath.IsAbs(dir) {
			bad("%s.directory: must be an absolute path", at)
		}
		clean := filepath.Clean(dir)
		if other, ok := dirs[clean]; ok {
			bad("%s.directory: already used by %s", at, other)
		}
		dirs[clean] = at
	}
	for i, d := range c.Deliveries {
		at := fmt.Sprintf("deliveries[%d]", i)
		useDir(at, d.Directory)
		if d.Store == "" {
			bad("%s.store: required", at)
		} else if !stores[d.Store] {
			bad("%s.store: no store named %q in stores", at, d.Store)
		}
		if len(d.Files) == 0 {
			bad("%s.files: at least one file is required", at)
		}
		names := map[string]bool{}
		for j, f := range d.Files {
			fat := fmt.Sprintf("%s.files[%d]", at, j)
			if msg := fileNameProblem(f.Name); msg != "" {
				bad("%s.name: %s", fat, msg)
			}
			if names[f.Name] {
				bad("%s.name: file %q is listed twice", fat, f.Name)
			}
			names[f.Name] = true
			if f.RemoteRef.Key == "" {
				bad("%s.remoteRef.key: required", fat)
			}
		}
		if t := d.Template; t != nil {
			if len(t.Data) == 0 {
				bad("%s.template.data: at least one template is required", at)
			}
			for name := range t.Data {
				if msg := fileNameProblem(name); msg != "" {
					bad("%s.template.data.%s: %s", at, name, msg)
				}
			}
			if mp := t.MergePolicy; mp != "" && mp != v1alpha1.TemplateMergeMerge && mp != v1alpha1.TemplateMergeReplace {
				bad("%s.template.mergePolicy: must be Replace or Merge", at)
			}
		}
		p = append(p, checkTarget(at, d.Mode, d.Owner, d.Group, d.OnChange)...)
	}
	if k := c.Kubernetes; k != nil {
		if len(k.ExternalSecrets) == 0 {
			bad("kubernetes.externalSecrets: at least one is required")
		}
		for i, e := range k.ExternalSecrets {
			at := fmt.Sprintf("kubernetes.externalSecrets[%d]", i)
			if e.Name == "" {
				bad("%s.name: required", at)
			}
			useDir(at, e.Directory)
			p = append(p, checkTarget(at, e.Mode, e.Owner, e.Group, e.OnChange)...)
		}
	}
	return p
}

func checkTarget(at, mode, owner, group string, a *Action) []string {
	var p []string
	if mode != "" {
		if _, err := parseMode(mode); err != nil {
			p = append(p, fmt.Sprintf("%s.mode: %v", at, err))
		}
	}
	if owner != "" {
		if _, err := lookupUser(owner); err != nil {
			p = append(p, fmt.Sprintf("%s.owner: %v", at, err))
		}
	}
	if group != "" {
		if _, err := lookupGroup(group); err != nil {
			p = append(p, fmt.Sprintf("%s.group: %v", at, err))
		}
	}
	if a != nil {
		p = append(p, a.check(at+".onChange")...)
	}
	return p
}

func (a *Action) check(at string) []string {
	var p []string
	hasCmd, hasSig := len(a.Command) > 0, a.Signal != ""
	switch {
	case hasCmd == hasSig:
		p = append(p, at+": set exactly one of command or signal")
	case hasSig:
		if _, err := parseSignal(a.Signal); err != nil {
			p = append(p, fmt.Sprintf("%s.signal: %v", at, err))
		}
		if (a.PidFile == "") == (a.Process == "") {
			p = append(p, at+": a signal needs exactly one of pidFile or process")
		}
	case a.PidFile != "" || a.Process != "":
		p = append(p, at+": pidFile and process go with signal, not command")
	}
	return p
}

// fileNameProblem tells why name cannot be a visible file name, or "".
func fileNameProblem(name string) string {
	switch {
	case name == "":
		return "required"
	case strings.ContainsRune(name, '/') || name == "." || name == "..":
		return "must be a plain file name (no / and not . or ..)"
	case strings.HasPrefix(name, ".."):
		return "must not start with .. (the agent's own entries do)"
	case len(name) > 255:
		return "longer than 255 bytes"
	}
	return ""
}

func parseMode(s string) (os.FileMode, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o777 {
		return 0, errors.New("must be an octal file mode such as \"0640\"")
	}
	return os.FileMode(m), nil
}

func (c *Config) defaults() {
	if c.RefreshInterval == nil {
		c.RefreshInterval = &metav1.Duration{Duration: DefaultRefreshInterval}
	}
	if c.ServiceAccountTokenFile == "" {
		c.ServiceAccountTokenFile = DefaultTokenFile
	}
	for i := range c.Deliveries {
		if c.Deliveries[i].Mode == "" {
			c.Deliveries[i].Mode = DefaultMode
		}
	}
	if c.Kubernetes != nil {
		for i := range c.Kubernetes.ExternalSecrets {
			if c.Kubernetes.ExternalSecrets[i].Mode == "" {
				c.Kubernetes.ExternalSecrets[i].Mode = DefaultMode
			}
		}
	}
}

// trimNewline is bytes.TrimRight of one trailing newline run, for tokens
// read from files.
func trimNewline(b []byte) []byte { return bytes.TrimRight(b, "\r\n") }
